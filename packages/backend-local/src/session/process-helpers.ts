/** Small host-side steps of a session: the proxy env, bubblewrap's info pid, signals, what a uid may read, hard limits. */
import { readFileSync, statSync } from 'node:fs';
import type { KillSignal } from '@mcpsandbox/core';

export function proxyEnv(port: number): Record<string, string> {
  const url = `http://127.0.0.1:${port}`;
  return {
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    NO_PROXY: 'localhost,127.0.0.1,::1',
    no_proxy: 'localhost,127.0.0.1,::1',
    NODE_USE_ENV_PROXY: '1',
  };
}

/** The host pid of bwrap's child (the namespace's init), as soon as bwrap's info fd names it. */
export function readInfoPid(stream: NodeJS.ReadableStream): Promise<number | undefined> {
  return new Promise((resolve) => {
    let text = '';
    const done = (pid: number | undefined) => {
      stream.removeAllListeners('data');
      stream.resume();
      resolve(pid);
    };
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      text += chunk;
      const pid = /"child-pid"\s*:\s*(\d+)\s*[,}]/.exec(text)?.[1];
      if (pid !== undefined) done(Number(pid));
      else if (text.length > 64 * 1024) done(undefined);
    });
    stream.once('end', () => done(undefined));
    stream.once('error', () => done(undefined));
  });
}

export function tryKill(pid: number, signal: KillSignal): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

/** True when `who` can read the path itself (and enter it, for a directory), whatever lies above. */
export function readableItself(path: string, who: { readonly uid: number }): boolean {
  try {
    const stat = statSync(path);
    const bits = stat.isDirectory() ? 0o5 : 0o4;
    const mode = stat.uid === who.uid ? (stat.mode >> 6) & 0o7 : stat.mode & 0o7;
    return (mode & bits) === bits;
  } catch {
    return false;
  }
}

/** True when `who` can search every directory on the way and read the target (group bits ignored). */
export function reachableBy(path: string, who: { readonly uid: number }): boolean {
  const allows = (mode: number, owner: number, bits: number) =>
    owner === who.uid ? (mode & (bits << 6)) !== 0 : (mode & bits) !== 0;
  try {
    let current = '';
    for (const part of path.split('/').filter(Boolean).slice(0, -1)) {
      current += `/${part}`;
      const stat = statSync(current);
      if (!allows(stat.mode, stat.uid, 0o1)) return false;
    }
    const stat = statSync(path);
    return allows(stat.mode, stat.uid, 0o4);
  } catch {
    return false;
  }
}

export function readHardLimits(): Record<string, number | undefined> {
  try {
    const text = readFileSync('/proc/self/limits', 'utf8');
    const hard = (label: string) => {
      const line = text.split('\n').find((l) => l.startsWith(label));
      const value = line?.slice(26).trim().split(/\s+/)[1];
      return value === undefined || value === 'unlimited' ? undefined : Number(value);
    };
    return {
      nproc: hard('Max processes'),
      nofile: hard('Max open files'),
      data: hard('Max data size'),
      fsize: hard('Max file size'),
    };
  } catch {
    return {};
  }
}
