/**
 * doctor reports uv, the Pythons uvx servers can use and the uv cache, asking the host's real uv
 * only: never a `uv` a sandbox could have written (the working folder, which a server's rw mount
 * may be, reached through a relative PATH entry or an activated project venv), and never with the
 * working folder's uv.toml choosing the cache it then walks.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnBin } from './helpers.js';

const root = mkdtempSync(join(tmpdir(), 'mcp-sandbox-doctor-uv-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The uv this machine has, as the install step finds it (its version is what doctor must print). */
const realUv = (() => {
  try {
    return execFileSync('uv', ['--version'], { cwd: '/', encoding: 'utf8' }).trim();
  } catch {
    return undefined;
  }
})();

function plant(path: string, marker: string): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, `#!/bin/sh\necho planted > ${JSON.stringify(marker)}\necho "uv 9.9.9"\n`);
  chmodSync(path, 0o755);
}

describe.skipIf(realUv === undefined)('doctor and uv (needs uv on PATH)', () => {
  it('never runs a uv planted in the working folder, and reports the real one, its Pythons and cache', async () => {
    const project = join(root, 'project');
    const marker = join(root, 'ran');
    // A relative PATH entry (resolved against the working folder) and an activated project venv.
    plant(join(project, 'bin', 'uv'), marker);
    plant(join(project, '.venv', 'bin', 'uv'), marker);
    plant(join(project, '.venv', 'bin', 'python3'), marker);
    // The working folder's uv.toml would choose the cache doctor walks.
    const evilCache = join(project, 'evil-cache');
    mkdirSync(evilCache);
    writeFileSync(join(project, 'uv.toml'), `cache-dir = ${JSON.stringify(evilCache)}\n`);
    const env: Record<string, string | undefined> = {
      ...process.env,
      PATH: `bin:${join(project, '.venv', 'bin')}:${process.env.PATH ?? ''}`,
      XDG_CACHE_HOME: join(root, 'xdg-cache'),
      UV_CACHE_DIR: undefined,
    };
    // Without UV_CACHE_DIR, uv's own answer decides: the test's cache, through XDG_CACHE_HOME.
    mkdirSync(join(root, 'xdg-cache', 'uv', 'wheels-v5'), { recursive: true });
    writeFileSync(join(root, 'xdg-cache', 'uv', 'wheels-v5', 'x'), 'x'.repeat(2048));
    const result = await spawnBin(['doctor'], env, project).result;
    expect(existsSync(marker), `a planted uv ran:\n${result.stdout.toString()}`).toBe(false);
    const out = result.stdout.toString();
    const version = /uv (\d+\.\d+\.\d+)/.exec(realUv ?? '')?.[1] as string;
    const uvLine = out.split('\n').find((l) => l.includes(' uv: ')) ?? '';
    // The real uv, and the planted ones named as not run (the user's shell would run them first).
    expect(uvLine).toMatch(new RegExp(`^! uv: ${version.replace(/\./g, '\\.')} at /\\S+/uv;`));
    expect(uvLine).toContain('bin/uv (a relative PATH entry)');
    expect(uvLine).toContain(`${join(project, '.venv', 'bin', 'uv')} (in the working folder)`);
    expect(out).not.toContain('9.9.9');
    expect(out).toMatch(/^✓ Python for uvx servers: \d+\.\d+\.\d+ at \/\S+; uv-managed: /m);
    expect(out).toContain(`· uvx cache: ${join(root, 'xdg-cache', 'uv')} (2.0 KiB`);
    expect(out).not.toContain('evil-cache');
  });
});
