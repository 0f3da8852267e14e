import { SandboxError, UsageError } from '@mcpsandbox/core';

/**
 * Windows runs the local OS sandbox inside WSL2 (bubblewrap there). These are the pieces a
 * Windows entry needs: the WSL spelling of a Windows path, and the command line that starts
 * `mcp-sandbox run` inside WSL.
 */

/** `C:\Users\me\proj` → `/mnt/c/Users/me/proj`; anything WSL does not show at /mnt/<drive> is refused. */
export function wslPath(windowsPath: string): string {
  const refuse = (why: string) =>
    new UsageError(`${JSON.stringify(windowsPath)} cannot be mounted through WSL: ${why}`);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f"*?<>|]/.test(windowsPath))
    throw refuse('it has a character Windows paths cannot hold');
  if (/^[\\/]{2}/.test(windowsPath)) {
    throw refuse(
      'a network (\\\\server\\share) or device (\\\\?\\) path is not under /mnt; map it to a drive letter first',
    );
  }
  const match = /^([A-Za-z]):[\\/](.*)$/.exec(windowsPath);
  if (!match) throw refuse('give an absolute path with a drive letter, like C:\\Users\\me\\project');
  const [, drive, rest] = match as unknown as [string, string, string];
  const parts = rest.split(/[\\/]+/).filter((part) => part !== '');
  if (parts.some((part) => part === '.' || part === '..')) throw refuse('it has a "." or ".." part');
  if (parts.some((part) => part.includes(':')))
    throw refuse('an alternate data stream (":") is not a file WSL shows');
  return `/mnt/${drive.toLowerCase()}${parts.map((part) => `/${part}`).join('')}`;
}

/** `--mount HOST[:SANDBOX][:ro|rw]` with a Windows host path, for `run` inside WSL. */
export function wslMountFlag(windowsPath: string, mode: 'ro' | 'rw'): string {
  const path = wslPath(windowsPath);
  return `${path}:${path}:${mode}`;
}

/** The command a Windows client starts: `wsl.exe -e mcp-sandbox run <args…>` (no shell in between). */
export function wslRunCommand(args: readonly string[]): string[] {
  return ['wsl.exe', '-e', 'mcp-sandbox', 'run', ...args];
}

/**
 * The WSL distributions of `wsl.exe -l -v` and their WSL version. wsl.exe writes UTF-16, which
 * arrives as text with NULs between the characters; a default distribution is marked `*`.
 */
export function parseWslList(output: string): { name: string; version: number }[] {
  const lines = output.replaceAll('\u0000', '').split(/\r?\n/).slice(1);
  const found: { name: string; version: number }[] = [];
  for (const line of lines) {
    const match = /^\s*\*?\s*(\S+)\s+\S+\s+([12])\s*$/.exec(line);
    if (match) found.push({ name: match[1] as string, version: Number(match[2]) });
  }
  return found;
}

/** What `wsl.exe -l -v` says of this Windows machine. */
export type WslStatus =
  | { readonly kind: 'missing' }
  | { readonly kind: 'wsl1'; readonly names: readonly string[] }
  | { readonly kind: 'wsl2'; readonly names: readonly string[] };

/** `wsl.exe -l -v`'s result: not started (no WSL), no WSL2 distribution, or the WSL2 ones. */
export function wslStatus(result: {
  readonly started: boolean;
  readonly code: number | null;
  readonly stdout: string;
}): WslStatus {
  if (!result.started || result.code !== 0) return { kind: 'missing' };
  const distros = parseWslList(result.stdout);
  const two = distros.filter((d) => d.version === 2).map((d) => d.name);
  if (two.length > 0) return { kind: 'wsl2', names: two };
  return distros.length > 0 ? { kind: 'wsl1', names: distros.map((d) => d.name) } : { kind: 'missing' };
}

/** A word of a command line as the user would type it again (quoted when it has spaces or quotes). */
function shellWord(word: string): string {
  return /^[\w@%+=:,./\\-]+$/.test(word) ? word : JSON.stringify(word);
}

/**
 * Why `local` does not start on Windows, and exactly how to start the same server inside WSL2:
 * bubblewrap is a Linux sandbox, and WSL2 is the Linux kernel Windows has.
 */
export class WslRequiredError extends SandboxError {
  constructor(command: readonly string[], status: WslStatus) {
    const inside = wslRunCommand(['--', ...command])
      .map(shellWord)
      .join(' ');
    const where =
      status.kind === 'wsl2'
        ? `WSL2 is here (${status.names.join(', ')}): run ${inside}`
        : status.kind === 'wsl1'
          ? `only WSL1 distributions are here (${status.names.join(', ')}; WSL1 has no Linux namespaces): wsl --set-version ${status.names[0]} 2, then run ${inside}`
          : `WSL is not installed: wsl --install (a WSL2 Ubuntu), then run ${inside}`;
    super(
      'E_WSL_REQUIRED',
      `on Windows, the local sandbox runs inside WSL2 (bubblewrap there): ${where}, with mcp-sandbox installed inside WSL (wsl.exe -e npm install -g mcp-sandbox); Windows drives are /mnt/c/… there; mcp-sandbox wrap writes such entries for you`,
    );
  }
}
