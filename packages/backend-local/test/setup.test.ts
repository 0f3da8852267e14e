/**
 * `--setup` on the local backend: the 0.2 pattern `--setup "npm install -g X" -- X` works, with
 * the setup step run like the npx install step (the registry, and nothing the server is granted).
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, HOSTILE_PACKAGE, runBin, startRegistry } from './cli.js';

const work = mkdtempSync(join(tmpdir(), 'mcpsandbox-setup-'));
chmodSync(work, 0o755);
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('--setup "npm install -g X" -- X', () => {
  // Before: "command not found" (127), the command was looked up on the host; and the setup step
  // had the server's secrets and files (and no registry to install from).
  it('installs into the sandbox home, runs X from there, and the install sees no secret or mount', {
    timeout: 180_000,
  }, async () => {
    const secretName = 'MCPSANDBOX_SETUP_TOKEN';
    const secret = `token-${randomUUID()}`;
    const mountedFile = join(work, 'notes.txt');
    const mountedText = `granted to the server ${randomUUID()}`;
    writeFileSync(mountedFile, mountedText, { mode: 0o644 });
    const registry = await startRegistry({
      canary: join(work, 'no-canary'),
      markerNames: [],
      secretName,
      mountedFile,
    });
    try {
      const running = await runBin(
        [
          '--env',
          secretName,
          '--mount',
          `${work}:ro`,
          '--backend-option',
          `npmRegistry=${registry.url}`,
          '--setup',
          `npm install -g ${HOSTILE_PACKAGE}@1.0.0`,
          '--',
          HOSTILE_PACKAGE,
        ],
        { [secretName]: secret },
      );
      try {
        // The server found on the sandbox's PATH runs with its grants...
        expect(await running.call('env', { name: secretName })).toEqual({ value: secret });
        expect(await running.call('read', { path: mountedFile })).toEqual({ text: mountedText });
      } finally {
        await running.client.close();
      }
      // ...while the setup step's install script reached only the registry, with neither.
      expect(registry.beacons).toHaveLength(1);
      const found = registry.beacons[0] ?? {};
      expect(found.secret).toBeNull();
      expect(found.mounted).toMatch(/^ERR /);
      expect(JSON.stringify(found)).not.toContain(secret);
      expect(JSON.stringify(found)).not.toContain(mountedText);
    } finally {
      await registry.close();
    }
  });

  it('a command found neither on the host nor in the sandbox exits 127 and says where it looked', {
    timeout: 60_000,
  }, async () => {
    // stdin stays open, as a client's does: the session ends because the command is missing.
    const child = spawn(process.execPath, [BIN, 'run', '--', 'no-such-server-anywhere'], {
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const [code] = (await once(child, 'close')) as [number | null];
    child.stdin.destroy();
    expect(code).toBe(127);
    expect(stderr).toContain('command not found: no-such-server-anywhere');
  });
});
