import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chownSync, existsSync, mkdirSync } from 'node:fs';
import { chmod, lchown, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import {
  type NetworkSpec,
  type PrepareOptions,
  type SandboxEvent,
  SandboxFailureError,
  SetupFailedError,
} from '@mcpsandbox/core';
import type { SpawnedProcess } from './child-process.js';
import type { Bind } from './view.js';

export const DEFAULT_NPM_REGISTRY = 'https://registry.npmjs.org/';

/** Where installed packages appear inside the sandbox (under the hidden, empty /run). */
export const SANDBOX_NPM_ROOT = '/run/mcp-sandbox/npm';

const MARKER = '.mcp-sandbox-install.json';

export interface NpxCacheOptions {
  /** Host directory of the persistent cache, one entry per registry and package spec. */
  readonly cacheRoot: string;
  readonly hostEnv: Readonly<Record<string, string | undefined>>;
  /** Registry URL; default: the host's `npm config get registry`. */
  readonly registry?: string;
}

export interface NpxCommand {
  readonly spec: string;
  readonly args: readonly string[];
}

/**
 * Recognizes `npx -y <pkg> [args…]` and `npx --yes <pkg> [args…]`. Anything else (other npx
 * flags, no `--yes`) is left alone and runs as given.
 */
export function parseNpxCommand(command: readonly string[]): NpxCommand | undefined {
  const [program, ...rest] = command;
  if (program === undefined || basename(program) !== 'npx') return undefined;
  let yes = false;
  let index = 0;
  for (; index < rest.length; index++) {
    const arg = rest[index]!;
    if (arg === '-y' || arg === '--yes') yes = true;
    else if (arg.startsWith('-')) return undefined;
    else break;
  }
  const spec = rest[index];
  if (!yes || spec === undefined) return undefined;
  const args = rest.slice(index + 1);
  return { spec, args: args[0] === '--' ? args.slice(1) : args };
}

export function cacheKey(registry: string, spec: string): string {
  return createHash('sha256').update(`${registry}\n${spec}`).digest('hex').slice(0, 24);
}

interface Installed {
  readonly spec: string;
  readonly registry: string;
  readonly name: string;
  readonly bin: string;
}

export interface NpxDeps {
  readonly cache: NpxCacheOptions;
  readonly runAs: { readonly uid: number; readonly gid: number } | undefined;
  readonly onEvent: ((event: SandboxEvent) => void) | undefined;
  /** Runs an install step in the sandbox with `binds` and only `network` for egress. */
  readonly install: (
    argv: readonly string[],
    binds: readonly Bind[],
    network: NetworkSpec,
    env: Readonly<Record<string, string>>,
  ) => Promise<SpawnedProcess>;
}

/**
 * Turns `npx -y pkg args…` into the installed binary: installs `pkg` once, inside the sandbox
 * with egress to the registry alone, into a persistent per-user cache entry; a warm entry is
 * used as is, with no network. The returned bind mounts the entry read-only for later execs.
 */
export async function prepareNpx(
  command: readonly string[],
  options: PrepareOptions,
  deps: NpxDeps,
): Promise<{ command: readonly string[]; bind?: Bind }> {
  const parsed = parseNpxCommand(command);
  if (!parsed) return { command };
  const npmConfig = await hostNpmConfig(deps.cache.hostEnv);
  const registry = normalizeRegistry(deps.cache.registry ?? npmConfig.registry);
  const key = cacheKey(registry, parsed.spec);
  const entry = join(deps.cache.cacheRoot, key);
  const inside = `${SANDBOX_NPM_ROOT}/${key}`;
  const say = (text: string) => options.stderr(Buffer.from(`mcp-sandbox: ${text}\n`));

  let installed = await readMarker(entry);
  if (installed) {
    deps.onEvent?.({ type: 'prepare', cache: 'hit', spec: parsed.spec, entry });
  } else {
    const registryUrl = new URL(registry);
    const port = registryUrl.port || (registryUrl.protocol === 'http:' ? '80' : '443');
    const grant = `${registryUrl.hostname}:${port}`;
    say(`installing ${parsed.spec} from ${registry} into ${entry} (network: ${grant} only)`);
    deps.onEvent?.({ type: 'prepare', cache: 'miss', spec: parsed.spec, entry, network: [grant] });
    mkdirSync(deps.cache.cacheRoot, { recursive: true, mode: deps.runAs ? 0o755 : 0o700 });
    const staging = await mkdtemp(join(deps.cache.cacheRoot, `${key}.tmp-`));
    try {
      if (deps.runAs) chownSync(staging, deps.runAs.uid, deps.runAs.gid);
      const argv = [
        'npm',
        'install',
        '--prefix',
        inside,
        '--registry',
        registry,
        '--no-audit',
        '--no-fund',
        '--no-update-notifier',
        '--loglevel',
        'warn',
        '--fetch-retries',
        '1',
        ...(npmConfig.strictSsl ? [] : ['--strict-ssl', 'false']),
        ...(npmConfig.cafile ? ['--cafile', npmConfig.cafile] : []),
        parsed.spec,
      ];
      // --prefix moves npm's global config out of sight: carry the host's CA trust over explicitly.
      const extraCa = deps.cache.hostEnv.NODE_EXTRA_CA_CERTS;
      const binds: Bind[] = [{ source: staging, dest: inside, mode: 'rw' }];
      for (const file of [npmConfig.cafile, extraCa]) {
        if (file?.startsWith('/')) binds.push({ source: file, dest: file, mode: 'ro' });
      }
      const env: Record<string, string> = extraCa ? { NODE_EXTRA_CA_CERTS: extraCa } : {};
      const proc = await deps.install(argv, binds, { allow: [grant] }, env);
      void proc.closeStdin();
      let tail = '';
      const forward = async (stream: AsyncIterable<Uint8Array>) => {
        for await (const chunk of stream) {
          options.stderr(chunk);
          tail = (tail + Buffer.from(chunk).toString()).slice(-2000);
        }
      };
      const abort = () => void proc.kill('SIGKILL');
      options.signal?.addEventListener('abort', abort, { once: true });
      const [status] = await Promise.all([proc.exit, forward(proc.stdout), forward(proc.stderr)]);
      options.signal?.removeEventListener('abort', abort);
      options.signal?.throwIfAborted();
      if (status.code !== 0) {
        throw new SetupFailedError(
          `installing ${parsed.spec} failed (npm exited ${status.code ?? status.signal}); ` +
            `the install may reach ${grant} only${tail ? `. npm said: ${lastLines(tail, 5)}` : ''}`,
          status.code,
        );
      }
      installed = await describeInstall(staging, parsed.spec, registry);
      await writeFile(join(staging, MARKER), `${JSON.stringify(installed)}\n`);
      if (deps.runAs) {
        // Installed as nobody; owned by us from now on, so no other nobody process can change it.
        await chownTree(staging, process.getuid?.() ?? 0, process.getgid?.() ?? 0);
      }
      await chmod(staging, 0o755);
      try {
        await rename(staging, entry);
      } catch (error) {
        // Another session installed the same entry meanwhile: use theirs.
        if (!(await readMarker(entry))) throw error;
        await rm(staging, { recursive: true, force: true });
      }
    } catch (error) {
      await rm(staging, { recursive: true, force: true }).catch(() => {});
      throw error;
    }
    deps.onEvent?.({ type: 'prepare', cache: 'stored', spec: parsed.spec, entry });
  }
  return {
    command: [`${inside}/node_modules/.bin/${installed.bin}`, ...parsed.args],
    bind: { source: entry, dest: inside, mode: 'ro' },
  };
}

async function readMarker(entry: string): Promise<Installed | undefined> {
  try {
    const marker = JSON.parse(await readFile(join(entry, MARKER), 'utf8')) as Installed;
    if (!existsSync(join(entry, 'node_modules', '.bin', marker.bin))) return undefined;
    return marker;
  } catch {
    return undefined;
  }
}

/** Finds the installed package and the binary npx would run: its only bin, or the one named after it. */
async function describeInstall(dir: string, spec: string, registry: string): Promise<Installed> {
  const manifest = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
  };
  const name = Object.keys(manifest.dependencies ?? {})[0];
  if (!name) throw new SandboxFailureError(`npm installed nothing for ${spec}`, { code: 'E_PREPARE' });
  const pkg = JSON.parse(await readFile(join(dir, 'node_modules', name, 'package.json'), 'utf8')) as {
    bin?: string | Record<string, string>;
  };
  const plain = name.startsWith('@') ? name.slice(name.indexOf('/') + 1) : name;
  let bin: string | undefined;
  if (typeof pkg.bin === 'string') bin = plain;
  else if (pkg.bin) {
    const names = Object.keys(pkg.bin);
    bin = names.length === 1 ? names[0] : names.find((n) => n === plain);
  }
  if (!bin) {
    throw new SandboxFailureError(`${name} has no single binary to run; pass the command explicitly`, {
      code: 'E_PREPARE',
    });
  }
  return { spec, registry, name, bin };
}

function normalizeRegistry(registry: string): string {
  return registry.endsWith('/') ? registry : `${registry}/`;
}

/** The host npm's registry and TLS trust (never its credentials), which the install inside needs. */
export interface HostNpmConfig {
  readonly registry: string;
  readonly cafile: string | undefined;
  readonly strictSsl: boolean;
}

const npmConfigs = new Map<string, Promise<HostNpmConfig>>();

/** Asks the host's npm once per process and environment: it takes half a second. */
function hostNpmConfig(hostEnv: Readonly<Record<string, string | undefined>>): Promise<HostNpmConfig> {
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
      ['config', 'get', 'registry', 'cafile', 'strict-ssl'],
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
        });
      },
    );
  });
}

async function chownTree(dir: string, uid: number, gid: number): Promise<void> {
  await lchown(dir, uid, gid);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await chownTree(path, uid, gid);
    else await lchown(path, uid, gid);
  }
}

function lastLines(text: string, count: number): string {
  return text.trim().split('\n').slice(-count).join(' / ');
}
