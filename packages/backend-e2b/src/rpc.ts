import { type SandboxError, SandboxFailureError } from '@mcpsandbox/core';
import type { Sandbox as SdkSandbox } from 'e2b';
import { E2B_ERROR_CODES, wrapE2BError } from './errors.js';

/**
 * The slice of envd's process service this backend drives directly. The SDK's `CommandHandle`
 * decodes output to text per chunk (bytes that are not UTF-8 become U+FFFD) and keeps all of it
 * in memory for the life of the command; a stdio server needs exact bytes and bounded memory, so
 * the server's event stream is read from the SDK's own Connect client (`commands.rpc`, a protected
 * member meant for extension) with the SDK's transport, auth and routing unchanged.
 */
export interface ProcessRpc {
  start(
    request: {
      process: { cmd: string; args: string[]; envs: Record<string, string>; cwd?: string };
      stdin: boolean;
    },
    options: { signal: AbortSignal; headers: Record<string, string> },
  ): AsyncIterable<StartResponse>;
}

export interface StartResponse {
  readonly event?: {
    readonly event:
      | { readonly case: 'start'; readonly value: { readonly pid: number } }
      | {
          readonly case: 'data';
          readonly value: {
            readonly output:
              | { readonly case: 'stdout' | 'stderr' | 'pty'; readonly value: Uint8Array }
              | { readonly case: undefined };
          };
        }
      | {
          readonly case: 'end';
          readonly value: {
            readonly exitCode: number;
            readonly exited: boolean;
            readonly status: string;
            readonly error?: string;
          };
        }
      | { readonly case: 'keepalive' | undefined; readonly value?: unknown };
  };
}

export function processRpc(sandbox: SdkSandbox): ProcessRpc {
  const rpc = (sandbox.commands as unknown as { rpc?: Partial<ProcessRpc> }).rpc;
  if (typeof rpc?.start !== 'function') {
    throw new SandboxFailureError(
      'this version of the e2b SDK has no process client to stream from; install the version @mcpsandbox/backend-e2b pins',
      { code: E2B_ERROR_CODES.other },
    );
  }
  return rpc as ProcessRpc;
}

// Connect's status codes (connectrpc.com/docs/protocol#error-codes).
const CANCELED = 1;
const DEADLINE_EXCEEDED = 4;
const NOT_FOUND = 5;
const RESOURCE_EXHAUSTED = 8;
const UNAVAILABLE = 14;
const UNAUTHENTICATED = 16;

/** Maps an error from the process stream to a typed error, the way the SDK's own handlers do. */
export function wrapRpcError(error: unknown, doing: string): SandboxError {
  const code = connectCode(error);
  const detail = error instanceof Error ? error.message.replace(/\s+/g, ' ').trim() : String(error);
  switch (code) {
    case UNAVAILABLE:
      return new SandboxFailureError(
        `the E2B sandbox is no longer running (TTL reached or killed) while trying to ${doing}`,
        { cause: error, code: E2B_ERROR_CODES.timeout },
      );
    case DEADLINE_EXCEEDED:
    case CANCELED:
      return new SandboxFailureError(`E2B timed out while trying to ${doing} (${detail})`, {
        cause: error,
        code: E2B_ERROR_CODES.timeout,
      });
    case UNAUTHENTICATED:
      return new SandboxFailureError(`the E2B sandbox refused the access token while trying to ${doing}`, {
        cause: error,
        code: E2B_ERROR_CODES.auth,
      });
    case RESOURCE_EXHAUSTED:
      return new SandboxFailureError(`E2B rate limit reached while trying to ${doing} (${detail})`, {
        cause: error,
        code: E2B_ERROR_CODES.quota,
      });
    case NOT_FOUND:
      return new SandboxFailureError(`E2B could not find what it needed to ${doing} (${detail})`, {
        cause: error,
        code: E2B_ERROR_CODES.notFound,
      });
    default:
      return wrapE2BError(error, doing);
  }
}

function connectCode(error: unknown): number | undefined {
  if (!(error instanceof Error) || error.name !== 'ConnectError') return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'number' ? code : undefined;
}
