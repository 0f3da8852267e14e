import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chownSync, existsSync, mkdirSync } from 'node:fs';
import { mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
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
  const registry = normalizeRegistry(deps.cache.registry ?? (await hostRegistry(deps.cache.hostEnv)));
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
    mkdirSync(deps.cache.cacheRoot, { recursive: true, mode: 0o700 });
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
        parsed.spec,
      ];
      const proc = await deps.install(argv, [{ source: staging, dest: inside, mode: 'rw' }], {
        allow: [grant],
      });
      void proc.closeStdin();
      const forward = async (stream: AsyncIterable<Uint8Array>) => {
        for await (const chunk of stream) options.stderr(chunk);
      };
      const abort = () => void proc.kill('SIGKILL');
      options.signal?.addEventListener('abort', abort, { once: true });
      const [status] = await Promise.all([proc.exit, forward(proc.stdout), forward(proc.stderr)]);
      options.signal?.removeEventListener('abort', abort);
      options.signal?.throwIfAborted();
      if (status.code !== 0) {
        throw new SetupFailedError(
          `installing ${parsed.spec} failed (npm exited ${status.code ?? status.signal}); ` +
            `the install may reach ${grant} only`,
          status.code,
        );
      }
      installed = await describeInstall(staging, parsed.spec, registry);
      await writeFile(join(staging, MARKER), `${JSON.stringify(installed)}\n`);
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

function hostRegistry(hostEnv: Readonly<Record<string, string | undefined>>): Promise<string> {
  const fromEnv = hostEnv.npm_config_registry ?? hostEnv.NPM_CONFIG_REGISTRY;
  if (fromEnv) return Promise.resolve(fromEnv);
  return new Promise((resolve) => {
    execFile(
      'npm',
      ['config', 'get', 'registry'],
      { env: { ...hostEnv }, timeout: 15_000 },
      (error, stdout) => {
        const value = String(stdout).trim();
        resolve(!error && /^https?:\/\//.test(value) ? value : DEFAULT_NPM_REGISTRY);
      },
    );
  });
}
