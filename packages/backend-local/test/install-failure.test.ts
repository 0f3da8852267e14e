/**
 * An install that needs more than the registry (a postinstall that downloads a prebuilt binary):
 * the failure quotes npm, names the refused host and the flag that grants it for the install
 * only, and keeps the install's output in a log the user can read after the sandbox is gone.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runBin, runToExit, startRegistry } from './cli.js';

const work = mkdtempSync(join(tmpdir(), 'mcpsandbox-install-failure-'));
chmodSync(work, 0o755);
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The "prebuilds" host, on another loopback address than the registry. */
async function startDownloads(): Promise<{ url: string; hits: () => number; close: () => Promise<void> }> {
  let hits = 0;
  const server: Server = createServer((_request, response) => {
    hits++;
    response.end('binary');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.3', resolve));
  const url = `http://127.0.0.3:${(server.address() as { port: number }).port}/prebuild.bin`;
  return { url, hits: () => hits, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('an install that downloads from a host other than the registry', () => {
  // Before: the summary quoted stack lines, pointed at a log inside the deleted sandbox, and
  // named no way to let the download through.
  it('fails with npm’s own lines, the refused host, the flag to grant it, and a log kept on the host', {
    timeout: 180_000,
  }, async () => {
    const downloads = await startDownloads();
    const registry = await startRegistry({ download: downloads.url }, 'download-install');
    const cache = join(work, 'cache');
    const host = new URL(downloads.url).host;
    try {
      const args = [
        '--backend-option',
        `npmRegistry=${registry.url}`,
        '--backend-option',
        `npmCacheDir=${cache}`,
      ];
      const { code, stderr } = await runToExit([...args, '--', 'npx', '-y', 'download-install@1.0.0']);
      expect(code).toBe(125);
      expect(stderr).toContain('installing download-install@1.0.0 failed');
      expect(stderr).toMatch(/npm said:\n\s+npm error/);
      expect(stderr).toContain(`its install scripts tried ${host}`);
      expect(stderr).toContain(`--install-allow-net ${host}`);
      expect(downloads.hits()).toBe(0);
      const log = /the whole install output: (\S+)/.exec(stderr)?.[1];
      expect(log && existsSync(log)).toBe(true);
      expect(readFileSync(log as string, 'utf8')).toContain('prebuild download failed');

      // The grant it names lets the install through, and the server starts.
      const running = await runBin([
        ...args,
        '--install-allow-net',
        host,
        '--',
        'npx',
        '-y',
        'download-install@1.0.0',
      ]);
      try {
        expect(running.client.getServerVersion()?.name).toBe('download-install');
      } finally {
        await running.client.close();
      }
      expect(downloads.hits()).toBe(1);
    } finally {
      await registry.close();
      await downloads.close();
    }
  });
});

describe('a fix-it line built from a host the install script chose (issue 20, finding 2)', () => {
  // Fails before proxy hosts were parsed as host names: the proxy took the URL's host
  // "x;{touch,m};x" as it was, refused it as not granted, and the failure suggested
  // `--install-allow-net x;{touch,m};x:80`, which runs `touch m` when pasted into bash.
  it('suggests no flag for a host that is not a name, says so, and the line runs nothing in a shell', {
    timeout: 180_000,
  }, async () => {
    const registry = await startRegistry({ download: 'http://x;%7Btouch,m%7D;x/' }, 'download-install');
    const cache = join(work, 'cache-hostile-host');
    try {
      const { code, stderr } = await runToExit([
        '--backend-option',
        `npmRegistry=${registry.url}`,
        '--backend-option',
        `npmCacheDir=${cache}`,
        '--',
        'npx',
        '-y',
        'download-install@1.0.0',
      ]);
      expect(code).toBe(125);
      // Control: the install script ran and asked the proxy for its URL.
      const log = /the whole install output: (\S+)/.exec(stderr)?.[1];
      expect(readFileSync(log as string, 'utf8')).toContain('prebuild download failed');
      // Every flag the message suggests is a plain value; pasted into bash, it runs nothing.
      expect(stderr).not.toMatch(/--install-allow-net \S*[^a-z0-9.:[\]\s-]/);
      const paste = join(work, 'paste');
      mkdirSync(paste, { recursive: true });
      for (const [, flags] of stderr.matchAll(/grant it for the install only: (.*)/g)) {
        execFileSync('bash', ['-c', `true ${flags}`], { cwd: paste });
      }
      expect(existsSync(join(paste, 'm'))).toBe(false);
      expect(stderr).toContain('host(s) that are not valid host names; refused, and no flag can grant them');
    } finally {
      await registry.close();
    }
  });
});

describe('an install whose granted download host this machine cannot reach (issue 21)', () => {
  // Before: after granting exactly the suggested host, the failure suggested the same
  // `--install-allow-net` again, and npm's cause was under its lines (the ENOTFOUND unsaid).
  it("puts npm's cause first, says the granted host does not resolve here, and does not suggest it again", {
    timeout: 180_000,
  }, async () => {
    const host = 'prebuilds.example.invalid';
    const registry = await startRegistry({ download: `http://${host}/prebuild.bin` }, 'download-install');
    const cache = join(work, 'cache-unreachable');
    try {
      const { code, stderr } = await runToExit([
        '--backend-option',
        `npmRegistry=${registry.url}`,
        '--backend-option',
        `npmCacheDir=${cache}`,
        '--install-allow-net',
        host,
        '--',
        'npx',
        '-y',
        'download-install@1.0.0',
      ]);
      expect(code).toBe(125);
      // Control: the install script ran and asked the proxy for the granted host.
      const log = /the whole install output: (\S+)/.exec(stderr)?.[1];
      expect(readFileSync(log as string, 'utf8')).toContain('prebuild download failed');
      const failure = stderr.slice(stderr.indexOf('installing download-install@1.0.0 failed'));
      const lines = failure.split('\n');
      expect(lines[0]).toBe(
        "installing download-install@1.0.0 failed in its build step (npm rebuild: the packages' install scripts): " +
          'an install script of download-install exited with code 1 (npm exited 1)',
      );
      expect(failure).toMatch(
        new RegExp(`\\n {2}${host.replace(/\./g, '\\.')}: does not resolve from this host \\(E[A-Z_]+\\)\\n`),
      );
      expect(failure).toContain('granting them again will not help');
      expect(stderr).not.toContain(`--install-allow-net ${host}`);
      expect(failure.indexOf('npm said:')).toBeLessThan(failure.indexOf('granting them again will not help'));
    } finally {
      await registry.close();
    }
  });
});
