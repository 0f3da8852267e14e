import { execFile } from 'node:child_process';
import type { HostNpmConfig } from '../install-job.js';
import { defaultUserNpmCache } from '../user-npm-cache.js';
import type { Bind } from '../view.js';
import type { NpxCacheOptions } from './types.js';

export type { HostNpmConfig } from '../install-job.js';

export const DEFAULT_NPM_REGISTRY = 'https://registry.npmjs.org/';

/**
 * What a step that installs packages needs to reach the registry as the host's npm would: the
 * registry's `host:port` grant, its URL and TLS trust as npm settings, and the CA files to show.
 * Never the host npm's credentials.
 */
export async function registryAccess(
  cache: NpxCacheOptions,
): Promise<{ grant: string; env: Record<string, string>; binds: Bind[] }> {
  const npmConfig = await hostNpmConfig(cache);
  const registry = normalizeRegistry(cache.registry ?? npmConfig.registry);
  const url = new URL(registry);
  const port = url.port || (url.protocol === 'http:' ? '80' : '443');
  const extraCa = cache.hostEnv.NODE_EXTRA_CA_CERTS;
  const env: Record<string, string> = { npm_config_registry: registry };
  if (!npmConfig.strictSsl) env.npm_config_strict_ssl = 'false';
  if (npmConfig.cafile) env.npm_config_cafile = npmConfig.cafile;
  if (extraCa) env.NODE_EXTRA_CA_CERTS = extraCa;
  const binds: Bind[] = [];
  for (const file of [npmConfig.cafile, extraCa]) {
    if (file?.startsWith('/')) binds.push({ source: file, dest: file, mode: 'ro' });
  }
  return { grant: `${url.hostname}:${port}`, env, binds };
}

export function normalizeRegistry(registry: string): string {
  return registry.endsWith('/') ? registry : `${registry}/`;
}

const npmConfigs = new Map<string, Promise<HostNpmConfig>>();

/** Asks the host's npm once per process and environment (it takes half a second), unless told. */
export function hostNpmConfig(cache: NpxCacheOptions): Promise<HostNpmConfig> {
  if (cache.npmConfig) return Promise.resolve(cache.npmConfig);
  const hostEnv = cache.hostEnv;
  const key = JSON.stringify(
    Object.entries(hostEnv)
      .filter(([name]) => ['HOME', 'PATH', 'XDG_CONFIG_HOME'].includes(name) || /^npm_config_/i.test(name))
      .sort(([a], [b]) => (a < b ? -1 : 1)),
  );
  let config = npmConfigs.get(key);
  if (!config) {
    config = askNpm(hostEnv);
    npmConfigs.set(key, config);
  }
  return config;
}

function askNpm(hostEnv: Readonly<Record<string, string | undefined>>): Promise<HostNpmConfig> {
  return new Promise((resolve) => {
    execFile(
      'npm',
      ['config', 'get', 'registry', 'cafile', 'strict-ssl', 'cache'],
      { env: { ...hostEnv }, timeout: 15_000 },
      (_error, stdout) => {
        const values = new Map<string, string>();
        for (const line of String(stdout).split('\n')) {
          const at = line.indexOf('=');
          if (at > 0) values.set(line.slice(0, at).trim(), line.slice(at + 1).trim());
        }
        const registry = values.get('registry') ?? '';
        const cafile = values.get('cafile');
        resolve({
          registry: /^https?:\/\//.test(registry) ? registry : DEFAULT_NPM_REGISTRY,
          cafile: cafile && cafile !== 'null' && cafile.startsWith('/') ? cafile : undefined,
          strictSsl: values.get('strict-ssl') !== 'false',
          cache: values.get('cache') ?? (hostEnv.HOME ? defaultUserNpmCache(hostEnv.HOME) : undefined),
        });
      },
    );
  });
}
