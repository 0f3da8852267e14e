// uv and uvx as a client started from a private HOME finds them: a version manager's shim on
// PATH (pyenv's) needs the user's HOME, so the directory of uv's real binary goes first.
import { execFileSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { ROOT } from './env.mjs';

/** PATH with the real uv/uvx first (the repository's .tmp/uv/bin when CI put it there). */
export function uvPath(path = process.env.PATH ?? '') {
  const candidates = [join(ROOT, '.tmp', 'uv', 'bin', 'uv')];
  try {
    const said = execFileSync('python3', ['-I', '-c', 'import uv; print(uv.find_uv_bin())'], {
      cwd: '/',
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    if (said) candidates.push(said);
  } catch {
    // no uv package for this python3: rely on PATH
  }
  for (const uv of candidates) {
    if (existsSync(uv) && existsSync(join(dirname(uv), 'uvx')))
      return `${dirname(realpathSync(uv))}${delimiter}${path}`;
  }
  return path;
}
