import { execFile } from 'node:child_process';
import { lstat, readdir, readFile } from 'node:fs/promises';
import { platform as osPlatform } from 'node:os';
import { join } from 'node:path';
import { programCandidate, programsOnPath } from './programs.js';
import type { DoctorHost, ExecResult } from './types.js';

export interface SystemHostOptions {
  /** The environment the checks read (PATH, HOME, E2B_API_KEY, …). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The running Node.js version (`process.versions.node`), when the caller knows it. */
  readonly nodeVersion?: string;
  /** Defaults to this OS. */
  readonly platform?: string;
  /** Per program run; a probe that hangs is reported as a failure. Default 10 s. */
  readonly timeoutMs?: number;
  /** The working folder (a server's rw mount may be it): default this process's. */
  readonly cwd?: string;
}

/** The real machine. */
export function createSystemDoctorHost(options: SystemHostOptions): DoctorHost {
  const timeout = options.timeoutMs ?? 10_000;
  const env = Object.fromEntries(
    Object.entries(options.env).filter((e): e is [string, string] => e[1] !== undefined),
  );
  return {
    platform: options.platform ?? osPlatform(),
    ...(options.nodeVersion ? { nodeVersion: options.nodeVersion } : {}),
    env: options.env,
    exec: (file, args, runOptions) =>
      new Promise<ExecResult>((resolve) => {
        execFile(
          file,
          [...args],
          {
            env,
            timeout,
            killSignal: 'SIGKILL',
            maxBuffer: 1 << 20,
            windowsHide: true,
            ...(runOptions?.cwd !== undefined ? { cwd: runOptions.cwd } : {}),
          },
          (error, stdout, stderr) => {
            const code = (error as (NodeJS.ErrnoException & { code?: unknown }) | null)?.code;
            if (error && typeof code === 'string') {
              resolve({ started: false, code: null, stdout: '', stderr: error.message });
              return;
            }
            const exit = error ? (typeof code === 'number' ? code : null) : 0;
            resolve({ started: true, code: exit, stdout: String(stdout), stderr: String(stderr) });
          },
        );
      }),
    programs: async (name) => programsOnPath(name, env.PATH ?? '', options.cwd ?? process.cwd()),
    fileFacts: async (path) => programCandidate(path, path, options.cwd ?? process.cwd()),
    listDir: (path) => readdir(path).catch(() => undefined),
    readText: (path) => readFile(path, 'utf8').catch(() => undefined),
    folderSize: (path) => folderUsage(path),
  };
}

/** How much of a cache doctor counts: a uv or npm cache can hold millions of files. */
export interface UsageLimits {
  readonly maxFiles: number;
  readonly maxMs: number;
}

const USAGE_LIMITS: UsageLimits = { maxFiles: 200_000, maxMs: 3_000 };

/**
 * A folder's total file size and direct entries, counted without following links, within
 * `limits`: past either, the count so far with `partial` set. Undefined when it cannot be read.
 */
export async function folderUsage(
  path: string,
  limits: UsageLimits = USAGE_LIMITS,
): Promise<{ bytes: number; entries: number; partial: boolean } | undefined> {
  let entries: string[];
  try {
    entries = await readdir(path);
  } catch {
    return undefined;
  }
  const deadline = Date.now() + limits.maxMs;
  let bytes = 0;
  let files = 0;
  const stack = [path];
  while (stack.length > 0) {
    if (files >= limits.maxFiles || Date.now() >= deadline)
      return { bytes, entries: entries.length, partial: true };
    const dir = stack.pop() as string;
    let names: import('node:fs').Dirent[];
    try {
      names = await readdir(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const entry of names) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) stack.push(full);
      else if (entry.isFile()) {
        if (files >= limits.maxFiles) return { bytes, entries: entries.length, partial: true };
        files += 1;
        bytes += (await lstat(full).catch(() => ({ size: 0 }))).size;
      }
    }
  }
  return { bytes, entries: entries.length, partial: false };
}
