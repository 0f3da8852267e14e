import {
  BackendUnavailableError,
  isSandboxError,
  type SandboxError,
  SandboxFailureError,
} from '@mcpsandbox/core';
import {
  AuthenticationError,
  InvalidArgumentError,
  NotFoundError,
  RateLimitError,
  ServiceBusyError,
  TemplateError,
  TimeoutError,
} from 'e2b';
import { oneLine } from './text.js';

/** Stable codes this backend reports, on top of core's. */
export const E2B_ERROR_CODES = {
  /** The API key was refused (HTTP 401). */
  auth: 'E_E2B_AUTH',
  /** Rate limit or concurrent-sandbox quota reached (HTTP 429), or E2B is busy (503). */
  quota: 'E_E2B_QUOTA',
  /** The template or sandbox does not exist (HTTP 404). */
  notFound: 'E_E2B_NOT_FOUND',
  /** A request timed out, or the sandbox reached its end of life while in use. */
  timeout: 'E_E2B_TIMEOUT',
  /** The E2B API could not be reached at all. */
  unreachable: 'E_E2B_UNREACHABLE',
  /** The connection to a running process dropped; its output since then is lost. */
  streamLost: 'E_E2B_STREAM_LOST',
  /** Installing an `npx -y` package in the VM failed. */
  install: 'E_E2B_INSTALL',
  /** E2B's egress rules cannot express a requested network grant. */
  networkUnsupported: 'E_E2B_NETWORK_UNSUPPORTED',
  /** envd (inside the VM) broke the protocol: a frame or answer over its cap, or malformed. */
  protocol: 'E_E2B_PROTOCOL',
  /** A mounted file changed between planning and upload (swapped, grown, not a file any more). */
  mountChanged: 'E_E2B_MOUNT_CHANGED',
  /** Anything else the SDK or E2B reported. */
  other: 'E_E2B',
} as const;

export type E2BErrorCode = (typeof E2B_ERROR_CODES)[keyof typeof E2B_ERROR_CODES];

/**
 * Turns whatever the `e2b` SDK threw into one of core's typed errors with a one-line, actionable
 * message; the SDK error stays as `cause`. `doing` names the step ("create sandbox", "upload files").
 */
export function wrapE2BError(error: unknown, doing: string): SandboxError {
  if (isSandboxError(error)) return error;
  const detail = oneLine(error);
  if (error instanceof AuthenticationError) {
    return new BackendUnavailableError(
      `E2B refused the API key while trying to ${doing}: check E2B_API_KEY (https://e2b.dev/dashboard?tab=keys)`,
      { cause: error, code: E2B_ERROR_CODES.auth },
    );
  }
  if (error instanceof RateLimitError || error instanceof ServiceBusyError) {
    return new SandboxFailureError(
      `E2B rate limit or sandbox quota reached while trying to ${doing}: wait, close other sandboxes or raise your plan's limit (${detail})`,
      { cause: error, code: E2B_ERROR_CODES.quota },
    );
  }
  if (error instanceof TimeoutError) {
    return new SandboxFailureError(
      `E2B timed out while trying to ${doing}: the sandbox ended (TTL reached or killed) or the request took too long (${detail})`,
      { cause: error, code: E2B_ERROR_CODES.timeout },
    );
  }
  if (error instanceof NotFoundError || error instanceof TemplateError) {
    return new SandboxFailureError(
      `E2B could not find what it needed to ${doing}: check the template name and that the sandbox still runs (${detail})`,
      { cause: error, code: E2B_ERROR_CODES.notFound },
    );
  }
  if (error instanceof InvalidArgumentError) {
    return new SandboxFailureError(`E2B rejected the request to ${doing}: ${detail}`, {
      cause: error,
      code: E2B_ERROR_CODES.other,
    });
  }
  if (isUnreachable(error)) {
    return new BackendUnavailableError(
      `cannot reach the E2B API to ${doing}: check the network, E2B_DOMAIN or E2B_API_URL (${detail})`,
      { cause: error, code: E2B_ERROR_CODES.unreachable },
    );
  }
  // The SDK reports a rejected create with a status prefix ("500: ...").
  const status = /^(\d{3}):/.exec(detail)?.[1];
  if (status === '404') {
    return new SandboxFailureError(`E2B could not find what it needed to ${doing}: ${detail}`, {
      cause: error,
      code: E2B_ERROR_CODES.notFound,
    });
  }
  return new SandboxFailureError(`E2B failed to ${doing}: ${detail}`, {
    cause: error,
    code: E2B_ERROR_CODES.other,
  });
}

function isUnreachable(error: unknown): boolean {
  const cause = error instanceof Error ? (error.cause as { code?: string } | undefined) : undefined;
  const code = cause?.code ?? (error as { code?: unknown } | undefined)?.code;
  return (
    (error instanceof TypeError && /fetch failed/i.test(error.message)) ||
    code === 'ECONNREFUSED' ||
    code === 'ENOTFOUND' ||
    code === 'EAI_AGAIN'
  );
}
