import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnBin } from './helpers.js';

// A user's own server in a project under /tmp (hidden by the sandbox): its entry point imports
// a module from elsewhere in the package, as a built TypeScript server does.
const project = mkdtempSync(join(tmpdir(), 'mcp-sandbox-own-files-'));
afterAll(() => rmSync(project, { recursive: true, force: true }));
// As a project folder usually is (mkdtemp makes 0700): as root the sandbox runs as another user.
chmodSync(project, 0o755);
mkdirSync(join(project, 'build'));
mkdirSync(join(project, 'lib'));
writeFileSync(join(project, 'package.json'), '{ "name": "my-server", "type": "module" }\n');
copyFileSync(
  fileURLToPath(new URL('./fixtures/tiny-server.mjs', import.meta.url)),
  join(project, 'lib', 'server.mjs'),
);
writeFileSync(join(project, 'build', 'index.js'), "import '../lib/server.mjs';\n");

describe("the server's own files (local backend)", () => {
  // Before: "Cannot find module '/home/sandbox/…'", with no hint that the file was hidden.
  it('shows the package root read-only at the same path and says so: `node ./build/index.js` works', async () => {
    const result = await spawnBin(
      ['inspect', '--json', '--', 'node', './build/index.js'],
      process.env,
      project,
    ).result;
    expect(result.stderr).toContain(`showing ${project} read-only at the same path: the server's own files`);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout.toString()).server.name).toBe('tiny-server');
  });

  it('control: with --no-auto-mount the file stays hidden and inspect says the program did not answer', async () => {
    const result = await spawnBin(
      ['inspect', '--no-auto-mount', '--', 'node', './build/index.js'],
      process.env,
      project,
    ).result;
    expect(result.code).toBe(1);
    expect(result.stderr).not.toContain('showing');
    expect(result.stderr).toMatch(/Cannot find module/);
  });

  it('the shown files are read-only to the server', async () => {
    writeFileSync(
      join(project, 'build', 'writer.js'),
      "import { writeFileSync } from 'node:fs';\ntry { writeFileSync(new URL('../planted.txt', import.meta.url), 'x'); console.error('WROTE'); } catch (e) { console.error('REFUSED ' + e.code); }\n",
    );
    const result = await spawnBin(['run', '--', 'node', 'build/writer.js'], process.env, project).result;
    expect(result.stderr).toContain('REFUSED EROFS');
  });
});
