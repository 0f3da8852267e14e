import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { open, readdir, realpath, rename, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { SandboxError } from '@mcpsandbox/core';

/** A client config that cannot be read, parsed or written safely. Nothing was changed. */
export class ConfigFileError extends SandboxError {
  readonly file: string;

  constructor(
    code: 'E_CONFIG_INVALID' | 'E_CONFIG_MISSING' | 'E_CONFIG_CHANGED' | 'E_CONFIG_IO',
    file: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
    this.file = file;
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Larger than any client config; a file this big is not one to edit. */
const MAX_CONFIG_BYTES = 16 * 2 ** 20;

/**
 * The file's text, or undefined when it does not exist. Only a regular file is read (a FIFO or a
 * device would hang or never end), of bounded size; `follow: false` refuses a link as well (our
 * own backups are never links). Refuses bytes that are not UTF-8.
 */
export async function readConfigText(
  file: string,
  options: { follow?: boolean } = {},
): Promise<string | undefined> {
  const flags =
    constants.O_RDONLY | constants.O_NONBLOCK | (options.follow === false ? constants.O_NOFOLLOW : 0);
  let bytes: Buffer;
  try {
    const handle = await open(file, flags);
    try {
      const info = await handle.stat();
      if (!info.isFile()) {
        throw new ConfigFileError(
          'E_CONFIG_INVALID',
          file,
          `${file}: not a regular file; refusing to read it`,
        );
      }
      if (info.size > MAX_CONFIG_BYTES) {
        throw new ConfigFileError('E_CONFIG_INVALID', file, `${file}: over 16 MiB; refusing to read it`);
      }
      bytes = await handle.readFile();
    } finally {
      await handle.close();
    }
  } catch (error) {
    if (error instanceof ConfigFileError) throw error;
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ConfigFileError('E_CONFIG_IO', file, `${file}: cannot read it (${(error as Error).message})`, {
      cause: error,
    });
  }
  try {
    return utf8.decode(bytes);
  } catch (error) {
    throw new ConfigFileError('E_CONFIG_INVALID', file, `${file}: not UTF-8 text; refusing to edit it`, {
      cause: error,
    });
  }
}

export const BACKUP_INFIX = '.mcp-sandbox-';
export const BACKUP_SUFFIX = '.bak';

function stamp(now: Date): string {
  // 2026-11-29T15-30-00-123Z: sortable, and legal in file names on every OS.
  return now.toISOString().replace(/[:.]/g, '-');
}

/** Where writes really land: a symlinked config (dotfile managers) is edited at its target. */
export async function resolveTarget(file: string): Promise<string> {
  try {
    return await realpath(file);
  } catch {
    return file;
  }
}

/** Copies `text` to `<file>.mcp-sandbox-<timestamp>.bak` next to the file, with the file's mode. */
export async function writeBackup(file: string, text: string, now: Date): Promise<string> {
  const mode = (await stat(file)).mode & 0o777;
  for (let n = 0; ; n++) {
    const path = `${file}${BACKUP_INFIX}${stamp(now)}${n ? `-${n}` : ''}${BACKUP_SUFFIX}`;
    try {
      const handle = await open(path, 'wx', mode);
      try {
        await handle.writeFile(text);
        await handle.sync();
      } finally {
        await handle.close();
      }
      return path;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || n > 100) throw error;
    }
  }
}

/** Backups of `file`, newest first. */
export async function listBackups(file: string): Promise<string[]> {
  const dir = dirname(file);
  const prefix = `${basename(file)}${BACKUP_INFIX}`;
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => n.startsWith(prefix) && n.endsWith(BACKUP_SUFFIX))
    .sort()
    .reverse()
    .map((n) => join(dir, n));
}

/**
 * Replaces the file with `text` atomically (a temporary file in the same folder, then rename), keeping
 * its mode. If the file no longer holds `expected` (another program wrote it meanwhile), nothing is
 * replaced.
 */
export async function writeAtomic(file: string, text: string, expected: string): Promise<void> {
  const mode = (await stat(file)).mode & 0o777;
  const temp = join(dirname(file), `.${basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temp, 'wx', mode);
  try {
    try {
      await handle.writeFile(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    if ((await readConfigText(file)) !== expected) {
      throw new ConfigFileError(
        'E_CONFIG_CHANGED',
        file,
        `${file}: changed while mcp-sandbox was editing it; nothing written, run the command again`,
      );
    }
    await rename(temp, file);
  } catch (error) {
    await unlink(temp).catch(() => {});
    throw error;
  }
}
