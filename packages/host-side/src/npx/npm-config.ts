import { execFile } from 'node:child_process';
import { join } from 'node:path';
import type { HostNpmConfig } from '../install-job.js';
import { defaultUserNpmCache } from '../user-npm-cache.js';
import type { Bind } from '../view.js';
import { npmConfigInputs } from './npm-config-inputs.js';
import { readNpmConfigStore, storeNpmAnswer, validNpmConfig } from './npm-config-store.js';
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

/**
 * Where npm is asked from when no project config is wanted: `/`, a folder no sandbox writes
 * (npm also skips project config there with `--location=global`; this keeps it from walking the
 * client's working folder at all).
 */
const NEUTRAL_CWD = '/';

/**
 * The host npm's settings: from the store when everything npm reads is as it was when it last
 * answered (npm-config-inputs.ts), else asked of npm (it takes a start 300–400 ms) and kept.
 * Asked once per process and inputs either way, unless told.
 *
 * Only the user's own configuration counts (user and global npmrc, npm's builtin, the
 * environment): a project `.npmrc` in the working folder, which a server granted that folder
 * could have written, is read only when the user opts in (`projectNpmrc`, `--project-npmrc`).
 */
export function hostNpmConfig(cache: NpxCacheOptions, cwd = process.cwd()): Promise<HostNpmConfig> {
  const settings = lookUpNpmConfig(cache, cwd);
  return settings.known ? Promise.resolve(settings.known) : settings.ask();
}

/**
 * {@link hostNpmConfig} in two halves: `known`, the settings when they are at hand without asking
 * npm (given, or kept in the store for the same inputs); else `ask()`, which asks npm.
 */
export function lookUpNpmConfig(
  cache: NpxCacheOptions,
  cwd = process.cwd(),
): { readonly known?: HostNpmConfig; ask(): Promise<HostNpmConfig> } {
  const given = cache.npmConfig;
  if (given) return { known: given, ask: () => Promise.resolve(given) };
  if (cache.projectNpmrc === true) return { ask: () => projectNpmConfig(cache, cwd) };
  const store = readNpmConfigStore(cache.cacheRoot);
  const inputs = npmConfigInputs(cache.hostEnv, NEUTRAL_CWD, store.salt);
  const stored = inputs && store.records.find((record) => record.inputs === inputs.digest);
  const ask = () => askedNpmConfig(cache, store, inputs);
  return stored ? { known: stored.answer, ask } : { ask };
}

function askedNpmConfig(
  cache: NpxCacheOptions,
  store: ReturnType<typeof readNpmConfigStore>,
  inputs: ReturnType<typeof npmConfigInputs>,
): Promise<HostNpmConfig> {
  const hostEnv = cache.hostEnv;
  const key = inputs ? `${store.salt}:${inputs.digest}` : environmentKey(hostEnv);
  let config = npmConfigs.get(key);
  if (!config) {
    config = askNpm(hostEnv, NEUTRAL_CWD, false).then(({ answer, loaded }) => {
      // Kept only when npm read nothing outside the inputs, and nothing changed while it ran.
      const after = inputs && npmConfigInputs(hostEnv, NEUTRAL_CWD, store.salt);
      const storable =
        inputs !== undefined &&
        after?.digest === inputs.digest &&
        loaded.length >= 3 &&
        loaded.every((file) => inputs.files.has(file)) &&
        validNpmConfig(answer) !== undefined;
      if (storable) storeNpmAnswer(cache.cacheRoot, store, { inputs: inputs.digest, answer });
      return answer;
    });
    npmConfigs.set(key, config);
  }
  return config;
}

/**
 * `--project-npmrc`: npm's answer in the working folder, project config included, never kept in
 * the store; `registrySource` names the file the registry came from, for the start to print.
 */
async function projectNpmConfig(cache: NpxCacheOptions, cwd: string): Promise<HostNpmConfig> {
  const key = `project:${cwd}:${environmentKey(cache.hostEnv)}`;
  let config = npmConfigs.get(key);
  if (!config) {
    config = Promise.all([
      askNpm(cache.hostEnv, cwd, true),
      hostNpmConfig({ ...cache, projectNpmrc: false }),
    ]).then(([{ answer, loaded }, own]) => {
      const env = cache.hostEnv;
      const userConfig = env.npm_config_userconfig ?? (env.HOME ? join(env.HOME, '.npmrc') : undefined);
      const projectFiles = loaded.filter((file) => file !== userConfig && isProjectFile(file, cwd));
      const registrySource =
        answer.registry === own.registry || projectFiles.length === 0
          ? 'your own npm configuration'
          : projectFiles.join(', ');
      return { ...answer, registrySource };
    });
    npmConfigs.set(key, config);
  }
  return config;
}

/** A config file in `cwd` or one of its ancestors: where npm finds a project's `.npmrc`. */
function isProjectFile(file: string, cwd: string): boolean {
  const dir = file.slice(0, file.lastIndexOf('/')) || '/';
  return file.endsWith('/.npmrc') && (cwd === dir || cwd.startsWith(dir === '/' ? '/' : `${dir}/`));
}

/** The in-process key when the inputs cannot be fingerprinted: the variables npm reads. */
function environmentKey(hostEnv: Readonly<Record<string, string | undefined>>): string {
  return JSON.stringify(
    Object.entries(hostEnv)
      .filter(([name]) => ['HOME', 'PATH', 'XDG_CONFIG_HOME'].includes(name) || /^npm_config_/i.test(name))
      .sort(([a], [b]) => (a < b ? -1 : 1)),
  );
}

/** npm's log line for each config file it loads (`--loglevel silly`, npm 7 and later). */
const LOADED_FILE = /^npm silly config load:file:(\/[^\0]*)$/;

function askNpm(
  hostEnv: Readonly<Record<string, string | undefined>>,
  cwd: string,
  project: boolean,
): Promise<{ readonly answer: HostNpmConfig; readonly loaded: readonly string[] }> {
  const args = ['config', 'get', 'registry', 'cafile', 'strict-ssl', 'cache', '--loglevel', 'silly'];
  // `--location=global`: npm loads no project config (checked with npm 10 and 11). No version
  // check, which would ask the registry from the host, and no log file: npm would write it in
  // (and clean old ones from) the cache directory, which may not be the user's.
  args.push('--no-update-notifier', '--logs-max=0', ...(project ? [] : ['--location=global']));
  return new Promise((resolve) => {
    execFile('npm', args, { env: { ...hostEnv }, cwd, timeout: 15_000 }, (_error, stdout, stderr) => {
      const values = new Map<string, string>();
      for (const line of String(stdout).split('\n')) {
        const at = line.indexOf('=');
        if (at > 0) values.set(line.slice(0, at).trim(), line.slice(at + 1).trim());
      }
      const loaded: string[] = [];
      for (const line of String(stderr).split('\n')) {
        const file = LOADED_FILE.exec(line.trimEnd())?.[1];
        if (file) loaded.push(file);
      }
      const registry = values.get('registry') ?? '';
      const cafile = values.get('cafile');
      const answer = {
        registry: /^https?:\/\//.test(registry) ? registry : DEFAULT_NPM_REGISTRY,
        cafile: cafile && cafile !== 'null' && cafile.startsWith('/') ? cafile : undefined,
        strictSsl: values.get('strict-ssl') !== 'false',
        cache: values.get('cache') ?? (hostEnv.HOME ? defaultUserNpmCache(hostEnv.HOME) : undefined),
      };
      resolve({ answer, loaded });
    });
  });
}
