import { createRequire } from 'node:module';
import { isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  type BackendFactoryOptions,
  BackendVersionError,
  type IsolationLevel,
  type SandboxBackend,
  SPECIFICATION_VERSION,
  UsageError,
} from '@mcpsandbox/core';
import type { BackendStatus } from './doctor/types.js';

/** Flags of `run` that some backends have no use for. */
export type BackendScopedFlag =
  | '--template'
  | '--mount'
  | '--allow-net'
  | '--state'
  | '--no-host-tls-trust'
  | '--project-npmrc';

/** A backend the program knows by name. `apps/cli` wires the built-in ones in. */
export interface BackendEntry {
  /** One line for `--help`. */
  readonly summary: string;
  /**
   * The isolation it gives, as its sessions will report it. `ls` counts a config entry sandboxed
   * only on a backend declared `os` or stronger; one that declares none never counts.
   */
  readonly isolation?: IsolationLevel;
  /** Flags this backend does not apply: given anyway, they are named in a warning at start. */
  readonly ignores?: readonly BackendScopedFlag[];
  /** May load the backend's module on demand, so a binary pays only for the backend it runs. */
  create(options: BackendFactoryOptions): SandboxBackend | Promise<SandboxBackend>;
  /**
   * Whether the backend works here, for `doctor` (see `echoTrial`). Without one, doctor calls a
   * backend that isolates something "not checked".
   */
  probe?(options: BackendFactoryOptions): Promise<BackendStatus>;
}

export type BackendRegistry = Readonly<Record<string, BackendEntry>>;

/**
 * Resolves `--backend`: a registered name, or a module (a path, or a package name resolved from
 * the working directory) that exports `createBackend(options)`. The contract version is checked
 * before the backend is used.
 */
export async function resolveBackend(
  name: string,
  registry: BackendRegistry,
  options: BackendFactoryOptions,
  cwd: string,
): Promise<SandboxBackend> {
  const entry = Object.hasOwn(registry, name) ? registry[name] : undefined;
  if (entry) return checkBackend(await entry.create(options), name);
  if (!looksLikeModule(name)) {
    const known = Object.keys(registry).join(', ');
    throw new UsageError(
      `--backend ${name}: no such backend (built in: ${known}); a custom backend is a path (./my-backend.js) or a package name`,
    );
  }
  const url = locateModule(name, cwd);
  let module: Record<string, unknown>;
  try {
    module = (await import(url)) as Record<string, unknown>;
  } catch (error) {
    throw new UsageError(`--backend ${name}: cannot load the module (${(error as Error).message})`, {
      cause: error,
    });
  }
  const factory = module.createBackend;
  if (typeof factory !== 'function') {
    throw new BackendVersionError(`--backend ${name}: the module does not export createBackend(options)`);
  }
  return checkBackend((factory as (o: BackendFactoryOptions) => unknown)(options), name);
}

function checkBackend(value: unknown, name: string): SandboxBackend {
  const backend = value as Partial<SandboxBackend> | null;
  if (!backend || typeof backend !== 'object') {
    throw new BackendVersionError(`--backend ${name}: createBackend() did not return a backend object`);
  }
  if (backend.specificationVersion !== SPECIFICATION_VERSION) {
    throw new BackendVersionError(
      `--backend ${name}: it implements ${JSON.stringify(backend.specificationVersion ?? 'no specificationVersion')}, ` +
        `but this mcp-sandbox speaks ${SPECIFICATION_VERSION}; upgrade one of them`,
    );
  }
  if (typeof backend.create !== 'function' || typeof backend.id !== 'string') {
    throw new BackendVersionError(`--backend ${name}: the backend lacks an id or a create() method`);
  }
  return backend as SandboxBackend;
}

function looksLikeModule(name: string): boolean {
  return name.startsWith('.') || isAbsolute(name) || name.startsWith('@') || /[/\\]|\.m?js$/.test(name);
}

function locateModule(name: string, cwd: string): string {
  if (name.startsWith('.') || isAbsolute(name)) return pathToFileURL(resolve(cwd, name)).href;
  try {
    return pathToFileURL(createRequire(join(cwd, 'noop.js')).resolve(name)).href;
  } catch {
    // An ESM-only package without a require condition: let import() resolve it.
    return name;
  }
}
