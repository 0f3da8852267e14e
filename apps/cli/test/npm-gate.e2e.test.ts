import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

// The built app's npm-gate.js, as the install step runs it as root: `node npm-gate.js <npm-cli.js>
// ci …`, started while the resolve runs. Here npm is a stand-in tree with npm's layout.
const GATE = fileURLToPath(new URL('../dist/npm-gate.js', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'npm-gate-e2e-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** An npm tree: bin/npm-cli.js records its argv; its arborist records that it was loaded. */
function fakeNpm(): { cli: string; ran: string; loaded: string } {
  const root = mkdtempSync(join(work, 'npm-'));
  const ran = join(root, 'ran.json');
  const loaded = join(root, 'arborist-loaded');
  mkdirSync(join(root, 'bin'));
  mkdirSync(join(root, 'node_modules', '@npmcli', 'arborist'), { recursive: true });
  writeFileSync(join(root, 'package.json'), '{"name":"npm","version":"0.0.0"}');
  writeFileSync(
    join(root, 'node_modules', '@npmcli', 'arborist', 'index.js'),
    `require('fs').writeFileSync(${JSON.stringify(loaded)}, String(Date.now()));\n`,
  );
  writeFileSync(
    join(root, 'bin', 'npm-cli.js'),
    `require('fs').writeFileSync(${JSON.stringify(ran)}, JSON.stringify(process.argv.slice(1)));\n`,
  );
  return { cli: join(root, 'bin', 'npm-cli.js'), ran, loaded };
}

/** Runs the gate; `input` is written to its stdin after `delayMs`, then stdin ends. */
function gate(cli: string, input: string, delayMs = 0): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [GATE, cli, 'ci', '--prefer-offline'], {
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  setTimeout(() => child.stdin.end(input), delayMs);
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr })));
}

describe('npm-gate.js: npm ci started early, run only on the go-ahead', () => {
  it('loads npm first, waits, then runs npm-cli.js with its arguments as npm’s bin would', async () => {
    const npm = fakeNpm();
    const told = Date.now() + 300;
    const result = await gate(npm.cli, 'go\n', 300);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(readFileSync(npm.ran, 'utf8'))).toEqual([npm.cli, 'ci', '--prefer-offline']);
    // Loaded before the go-ahead came: the start it saves.
    expect(Number(readFileSync(npm.loaded, 'utf8'))).toBeLessThan(told);
  });

  it('stdin that ends without the go-ahead runs nothing', async () => {
    const npm = fakeNpm();
    for (const input of ['', 'g', 'no\n']) {
      const result = await gate(npm.cli, input);
      expect(result.code).toBe(75);
      expect(result.stderr).toContain('before the host said to go on');
      expect(existsSync(npm.ran)).toBe(false);
    }
  });
});
