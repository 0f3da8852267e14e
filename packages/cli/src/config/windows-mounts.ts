import { statSync } from 'node:fs';
import { wslPath } from '../wsl.js';
import type { PathMount, RefusedPath } from './path-mounts.js';

/**
 * wrap on Windows: the entry starts `wsl.exe -e mcp-sandbox run … -- <server>`, and the server runs
 * inside WSL2, where a Windows folder `C:\Users\me\notes` is `/mnt/c/Users/me/notes`. The paths
 * its arguments name are translated and mounted there, under the same rule as on Linux: never the
 * home, above it, its hidden or settings folders, the root of a drive or a system folder. The
 * config may be a stranger's, and Windows has many spellings of one file (case, 8.3 short names,
 * trailing dots and spaces, device names, streams, `\\?\`): only one spelling is translated, the
 * one unwrap can turn back letter for letter (`C:\folder\…`: a capital drive letter, single
 * backslashes); any other is left as it is, unmounted, and said.
 */

/** The one spelling wrap translates: `C:\a\b`, each part plain (no `:`, no trailing dot or space). */
const CANONICAL = /^[A-Z]:(\\[^\\/]+)+$/;
/** What looks like a Windows path at all (drive, UNC or device prefix, a backslash). */
const WINDOWS_LIKE = /^(?:[A-Za-z]:|[\\/]{2})|\\/;
/** Names Windows maps to devices in any folder (`C:\x\NUL.txt` is the NUL device). */
const DEVICE_NAME = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)(\..*)?$/i;
/** Folders of the drive's root that hold the system, installed programs or every user's data. */
const SYSTEM_FOLDERS = [
  'windows',
  'program files',
  'program files (x86)',
  'programdata',
  'users',
  'recovery',
];
/** Under the home, these hold settings and secrets (as the dot folders do). */
const HOME_SETTINGS = new Set(['appdata', 'ntuser.dat']);

export interface WindowsMountOptions {
  readonly rw: boolean;
  /** `%USERPROFILE%`: nothing of it is carried across but its ordinary folders. */
  readonly home?: string;
  readonly exists?: (path: string) => boolean;
  /**
   * `wrap --update` of an entry wrap wrote: its WSL-spelled paths are its own translations, mounted
   * again. On a first wrap, such a word is the config's own, and is left as it is: unwrap turns
   * back only what wrap translated.
   */
  readonly rewrap?: boolean;
}

export interface WindowsPathMounts {
  /** The server's argv with each translated path in its WSL spelling. */
  readonly server: readonly string[];
  readonly mounts: readonly PathMount[];
  readonly refused: readonly RefusedPath[];
}

/** The server words of an entry, with the Windows paths they name translated for WSL and mounted. */
export function windowsPathMountsFor(
  argv: readonly string[],
  options: WindowsMountOptions,
): WindowsPathMounts {
  // A Windows path can be looked at only on Windows; elsewhere (tests of the Windows shape) it is taken as there.
  const exists = options.exists ?? (process.platform === 'win32' ? windowsPathExists : () => true);
  const mode = options.rw ? 'rw' : 'ro';
  const mounts: PathMount[] = [];
  const refusals: RefusedPath[] = [];
  const refused = { push: (r: RefusedPath) => refusals.some((o) => o.path === r.path) || refusals.push(r) };
  const server = argv.map((word, index) => {
    if (index === 0) return word;
    const eq = word.startsWith('-') ? word.indexOf('=') : -1;
    const candidate = eq === -1 ? word : word.slice(eq + 1);
    const translated = windowsSpelling(candidate);
    if (translated !== undefined) {
      const reason = options.rewrap
        ? windowsRefusal(translated, options.home)
        : 'already a WSL path: left as the config has it';
      if (reason) refused.push({ path: candidate, reason });
      else if (exists(translated) && !mounts.some((m) => m.path === candidate))
        mounts.push({ path: candidate, mode });
      return word;
    }
    if (!WINDOWS_LIKE.test(candidate)) return word;
    const reason = windowsRefusal(candidate, options.home);
    if (reason) {
      refused.push({ path: candidate, reason });
      return word;
    }
    if (!exists(candidate)) return word;
    const path = wslPath(candidate);
    if (!mounts.some((m) => m.path === path)) mounts.push({ path, mode });
    return eq === -1 ? path : `${word.slice(0, eq + 1)}${path}`;
  });
  return { server, mounts, refused: refusals };
}

/** Why the Windows path `path` is never translated and mounted by wrap, or undefined. */
export function windowsRefusal(path: string, home: string | undefined): string | undefined {
  try {
    wslPath(path);
  } catch (error) {
    return (error as Error).message.replace(/^.*cannot be mounted through WSL: /, 'WSL cannot see it: ');
  }
  if (/^[A-Za-z]:[\\/]*$/.test(path)) return 'the root of a drive';
  if (!CANONICAL.test(path)) {
    return 'spelled other than C:\\folder\\… (a capital drive letter, single backslashes): respell it to have it mounted';
  }
  const parts = path.slice(3).split('\\');
  if (parts.some((part) => /[.\s]$/.test(part) || part.startsWith(' ')))
    return 'a part ends in a dot or space (Windows drops them: another spelling of another folder)';
  if (parts.some((part) => /~\d/.test(part)))
    return 'an 8.3 short name (PROGRA~1): another spelling of a folder wrap cannot check';
  if (parts.some((part) => DEVICE_NAME.test(part))) return 'a device name (NUL, CON, COM1…)';
  const lower = path.toLowerCase();
  const homeLower = home && CANONICAL.test(home) ? home.toLowerCase() : undefined;
  if (homeLower) {
    if (lower === homeLower) return 'the home folder';
    if (homeLower.startsWith(`${lower}\\`)) return 'a folder above the home';
    if (lower.startsWith(`${homeLower}\\`)) {
      const first = lower.slice(homeLower.length + 1).split('\\')[0] ?? '';
      if (first.startsWith('.') || HOME_SETTINGS.has(first)) return 'a credentials or settings folder';
    }
  }
  // Any user's home and its settings, whether or not %USERPROFILE% says which is this user's.
  if ((parts[0] as string).toLowerCase() === 'users' && parts.length === 2) return 'a home folder';
  if ((parts[0] as string).toLowerCase() === 'users' && parts.length > 2) {
    const first = (parts[2] as string).toLowerCase();
    if (first.startsWith('.') || HOME_SETTINGS.has(first)) return 'a credentials or settings folder';
  }
  if (parts.length === 1 && SYSTEM_FOLDERS.includes((parts[0] as string).toLowerCase()))
    return 'a system folder';
  const top = (parts[0] as string).toLowerCase();
  if (top === 'windows' || top === 'programdata' || top.startsWith('$')) return 'a system folder';
  if (top === 'users' && parts.length >= 2 && /^(default|public|all users)$/i.test(parts[1] as string))
    return 'a system folder';
  return undefined;
}

/** `/mnt/c/Users/me/notes` → `C:\Users\me\notes`: what unwrap writes back for a path wrap translated. */
export function windowsSpelling(path: string): string | undefined {
  const match = /^\/mnt\/([a-z])((?:\/[^/]+)+)$/.exec(path);
  if (!match) return undefined;
  const back = `${(match[1] as string).toUpperCase()}:${(match[2] as string).replaceAll('/', '\\')}`;
  return CANONICAL.test(back) && wslPath(back) === path ? back : undefined;
}

function windowsPathExists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}
