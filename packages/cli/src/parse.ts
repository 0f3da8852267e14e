import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { type MountSpec, UsageError } from '@mcpsandbox/core';

/** `<host>[:<inside>][:ro|rw]`, read-only unless `rw` is said. */
export function parseMount(text: string, cwd: string): MountSpec {
  const parts = text.split(':');
  let mode: 'ro' | 'rw' = 'ro';
  const last = parts[parts.length - 1];
  if (parts.length > 1 && (last === 'ro' || last === 'rw')) {
    mode = last;
    parts.pop();
  }
  if (parts.length > 2 || !parts[0]) {
    throw new UsageError(`--mount ${text}: expected <host-path>[:<sandbox-path>][:ro|rw]`);
  }
  const hostPath = resolve(cwd, parts[0]);
  if (!existsSync(hostPath)) throw new UsageError(`--mount ${text}: ${hostPath} does not exist`);
  const sandboxPath = parts[1] ?? hostPath;
  if (!isAbsolute(sandboxPath)) throw new UsageError(`--mount ${text}: the sandbox path must be absolute`);
  return { hostPath, sandboxPath, mode };
}

const HOST =
  /^(\*|(\*\.)?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.?|\d{1,3}(\.\d{1,3}){3}|\[[0-9A-Fa-f:.]+\])(:\d{1,5})?$/;

export function parseAllowNet(text: string): string {
  if (!HOST.test(text)) {
    throw new UsageError(`--allow-net ${text}: expected host, host:port, *.suffix or * (for anything)`);
  }
  return text.toLowerCase();
}

const SIZE_UNITS: Record<string, number> = {
  '': 1,
  k: 1024,
  kb: 1000,
  kib: 1024,
  m: 2 ** 20,
  mb: 1e6,
  mib: 2 ** 20,
  g: 2 ** 30,
  gb: 1e9,
  gib: 2 ** 30,
};

/** `65536`, `64KiB`, `20MB`, `1GiB`. */
export function parseSize(text: string, flag: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(text.trim());
  const unit = SIZE_UNITS[(match?.[2] ?? '').toLowerCase()];
  if (!match || unit === undefined)
    throw new UsageError(`${flag} ${text}: expected a size such as 64MiB or 1048576`);
  const bytes = Math.floor(Number(match[1]) * unit);
  if (bytes < 1024) throw new UsageError(`${flag} ${text}: must be at least 1024 bytes`);
  return bytes;
}

/** `key=value` pairs for `--backend-option`. */
export function parseSetting(text: string): [string, string] {
  const eq = text.indexOf('=');
  if (eq <= 0) throw new UsageError(`--backend-option ${text}: expected key=value`);
  return [text.slice(0, eq), text.slice(eq + 1)];
}
