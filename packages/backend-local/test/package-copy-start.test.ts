import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, startRegistry } from './cli.js';

const cache = mkdtempSync(join(tmpdir(), 'mcpsandbox-copy-start-'));
afterAll(() => rmSync(cache, { recursive: true, force: true }));

/** `mcp-sandbox run` with raw stdio, an initialize written, until it exits. */
function runToExit(
  args: readonly string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, 'run', ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const initialize = {
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } },
  };
  child.stdin.write(`${JSON.stringify(initialize)}\n`);
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

describe("the session's copy of the server's package, made by the server's own start", () => {
  it('a copy that fails ends the start with exit 125 and says so, before the server runs', async () => {
    const registry = await startRegistry({}, 'unreadable-install');
    try {
      const result = await runToExit([
        '--backend-option',
        `npmRegistry=${registry.url}`,
        '--backend-option',
        `npmCacheDir=${cache}`,
        '--',
        'npx',
        '-y',
        'unreadable-install@1.0.0',
      ]);
      // Control: the install ran and the package was served.
      expect(registry.tarballs()).toBeGreaterThan(0);
      expect(result.stderr).toContain("could not make the server's package writable");
      expect(result.code, result.stderr).toBe(125);
      // The server never answered: its start stopped at the copy.
      expect(result.stdout).not.toContain('"serverInfo"');
    } finally {
      await registry.close();
    }
  }, 120_000);
});
