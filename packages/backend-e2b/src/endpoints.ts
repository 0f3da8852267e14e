import { isIP } from 'node:net';
import { UsageError } from '@mcpsandbox/core';

const DEFAULT_DOMAIN = 'e2b.app';
const DOMAIN = /^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i;
const ENDPOINT_SETTINGS = ['domain', 'apiUrl', 'sandboxUrl'] as const;

export interface Endpoints {
  readonly domain: string;
  readonly apiUrl: string;
  readonly sandboxUrl: string | undefined;
  /** The host that receives the API key, for the start-up line. */
  readonly keyHost: string;
  /** True when the API is not E2B's own default. */
  readonly overridden: boolean;
  /** A bad endpoint, reported when a sandbox is created (factories do not throw). */
  readonly error: UsageError | undefined;
}

/**
 * Where the API key goes. Only the host's environment (E2B's own variables) or code may move it;
 * `--backend-option` settings may not, since a project's config could carry one. The API key and
 * envd's access token travel over HTTPS; plain HTTP is accepted only to a loopback address, where
 * the bytes never leave this machine (a local E2B, or the offline fake the tests use).
 */
export function resolveEndpoints(input: {
  domain: string | undefined;
  apiUrl: string | undefined;
  sandboxUrl: string | undefined;
  settings: Readonly<Record<string, string>>;
}): Endpoints {
  const domain = input.domain ?? DEFAULT_DOMAIN;
  const apiUrl = input.apiUrl ?? `https://api.${domain}`;
  const base = {
    domain,
    apiUrl,
    sandboxUrl: input.sandboxUrl,
    keyHost: hostOf(apiUrl),
    overridden: input.apiUrl !== undefined || input.domain !== undefined,
  };
  const setting = ENDPOINT_SETTINGS.find((key) => input.settings[key] !== undefined);
  if (setting) {
    return {
      ...base,
      error: new UsageError(
        `the e2b endpoint '${setting}' cannot be set with --backend-option or a config file (it decides who receives E2B_API_KEY); set ${ENV_NAMES[setting]} in the environment instead`,
      ),
    };
  }
  if (!DOMAIN.test(domain)) {
    return {
      ...base,
      error: new UsageError(`E2B_DOMAIN must be a domain name like e2b.app, not '${domain}'`),
    };
  }
  const error =
    checkUrl('E2B_API_URL', apiUrl) ??
    (input.sandboxUrl ? checkUrl('E2B_SANDBOX_URL', input.sandboxUrl) : undefined);
  return { ...base, error };
}

const ENV_NAMES: Record<(typeof ENDPOINT_SETTINGS)[number], string> = {
  domain: 'E2B_DOMAIN',
  apiUrl: 'E2B_API_URL',
  sandboxUrl: 'E2B_SANDBOX_URL',
};

function checkUrl(name: string, value: string): UsageError | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return new UsageError(`${name} must be a URL like https://api.e2b.app`);
  }
  if (url.username || url.password) return new UsageError(`${name} must not carry credentials`);
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && isLoopback(url.hostname)) return undefined;
  return new UsageError(
    `${name} must use https (plain http only to a loopback address): ${url.protocol}//${url.host} would receive the key in clear`,
  );
}

function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}
