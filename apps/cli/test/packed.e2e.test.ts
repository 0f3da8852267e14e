import { execFile } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVERYTHING } from './helpers.js';

// What is tested is what would be published: every package packed with `pnpm pack` (workspace
// ranges replaced), installed with plain npm into an empty directory, no workspace links. Only
// third-party dependencies come from the registry.

const run = promisify(execFile);
const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
const PNPM = ['--yes', 'pnpm@12.4.2'];

let root: string;
let app: string;
let tarballs: string[];
const bin = () => join(app, 'node_modules', 'mcp-sandbox', 'dist', 'bin.js');

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'mcp-sandbox-packed-'));
  const packs = join(root, 'tarballs');
  app = join(root, 'app');
  mkdirSync(app);
  await run(
    'npx',
    [...PNPM, '-r', '--filter', './packages/*', '--filter', './apps/*', 'pack', '--pack-destination', packs],
    {
      cwd: REPO,
    },
  );
  tarballs = readdirSync(packs)
    .filter((n) => n.endsWith('.tgz'))
    .sort();
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'packed-install', private: true, type: 'module' }),
  );
  // vitest only to run the conformance suite of the custom backend below, as its author would.
  await run(
    'npm',
    [
      'install',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      ...tarballs.map((t) => join(packs, t)),
      'vitest@4.1.12',
    ],
    { cwd: app, maxBuffer: 16 * 2 ** 20 },
  );
  process.stdout.write(`installed from ${packs} with npm:\n${tarballs.map((t) => `  ${t}\n`).join('')}`);
}, 600_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function sdkClient(command: string, args: string[], env: Record<string, string>, cwd = app) {
  const transport = new StdioClientTransport({ command, args, env, cwd, stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const client = new Client({ name: 'packed-test', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

describe('the packed packages, installed with npm', () => {
  it('are every workspace package, installed as files (no links into the repository)', () => {
    const libraries = readdirSync(join(REPO, 'packages')).filter((d) =>
      existsSync(join(REPO, 'packages', d, 'package.json')),
    );
    expect(tarballs).toHaveLength(libraries.length + 1);
    for (const name of libraries) {
      expect(tarballs.some((t) => t.startsWith(`mcpsandbox-${name}-`))).toBe(true);
      const dir = realpathSync(join(app, 'node_modules', '@mcpsandbox', name));
      expect(dir.startsWith(realpathSync(app))).toBe(true);
    }
    expect(realpathSync(bin()).startsWith(realpathSync(app))).toBe(true);
    // One copy of core: the backends and the cli share the contract the binary checks.
    const nested = readdirSync(join(app, 'node_modules'), { recursive: true }).filter((p) =>
      String(p).endsWith('node_modules/@mcpsandbox/core'),
    );
    expect(nested).toEqual([]);
  });

  it('run: server-everything in the local sandbox, through the installed binary', async () => {
    const { client, stderr } = await sdkClient(
      join(app, 'node_modules', '.bin', 'mcp-sandbox'),
      ['run', '--mount', `${REPO}:ro`, '--', 'node', EVERYTHING, 'stdio'],
      { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/' },
    );
    try {
      expect((await client.listTools()).tools).toHaveLength(13);
      const echo = await client.callTool({ name: 'echo', arguments: { message: 'packed' } });
      expect(echo.content).toEqual([{ type: 'text', text: 'Echo: packed' }]);
    } finally {
      await client.close();
    }
    expect(stderr()).toContain('backend local, isolation os');
  });

  it('inspect lists the same 13 tools', async () => {
    const { stdout } = await run(
      bin(),
      ['inspect', '--json', '--mount', `${REPO}:ro`, '--', 'node', EVERYTHING],
      {
        cwd: app,
      },
    );
    const report = JSON.parse(stdout);
    expect(report.tools).toHaveLength(13);
    expect(report.isolation).toBe('os');
  });

  it('a custom backend built only on the packed core passes the conformance suite and serves through run and inspect', async () => {
    copyFileSync(join(FIXTURES, 'packed-backend.mjs'), join(app, 'packed-backend.mjs'));
    writeFileSync(
      join(app, 'conformance.test.mjs'),
      "import { runConformanceSuite } from '@mcpsandbox/core/conformance';\n" +
        "import { createBackend } from './packed-backend.mjs';\n" +
        "runConformanceSuite({ name: 'packed-example', createBackend });\n",
    );
    const suite = await run(
      process.execPath,
      [join(app, 'node_modules', 'vitest', 'vitest.mjs'), 'run', '--reporter=json'],
      {
        cwd: app,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/' },
        maxBuffer: 16 * 2 ** 20,
      },
    );
    const results = JSON.parse(suite.stdout) as {
      numPassedTests: number;
      numFailedTests: number;
      success: boolean;
    };
    expect(results.numFailedTests).toBe(0);
    expect(results.numPassedTests).toBe(13);

    const { client, stderr } = await sdkClient(
      bin(),
      ['run', '--backend', './packed-backend.mjs', '--', process.execPath, EVERYTHING, 'stdio'],
      { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/' },
    );
    try {
      expect((await client.listTools()).tools).toHaveLength(13);
    } finally {
      await client.close();
    }
    expect(stderr()).toContain('backend packed-example, isolation none');
    const { stdout } = await run(
      bin(),
      ['inspect', '--json', '--backend', './packed-backend.mjs', '--', process.execPath, EVERYTHING],
      {
        cwd: app,
      },
    );
    expect(JSON.parse(stdout).tools).toHaveLength(13);
  });

  it("the bundled binary reads a custom backend's errors from its own copy of core: command not found is 127", async () => {
    // The app carries core bundled inside it; the backend imports the separately installed
    // @mcpsandbox/core. Its SandboxFailureError must still be read as one, code and all.
    copyFileSync(join(FIXTURES, 'packed-backend.mjs'), join(app, 'packed-backend.mjs'));
    const failed = await run(
      bin(),
      ['run', '--backend', './packed-backend.mjs', '--', 'no-such-command-packed-backend'],
      { cwd: app, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/' } },
    ).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed.stderr).toContain('command not found: no-such-command-packed-backend');
    expect(failed.stderr).not.toContain('unexpected failure');
    expect(failed.code).toBe(127);
  });

  it('wrap writes this binary by its path (a tarball install is not from a registry), or the launcher it was given; the entry starts as a client starts it', async () => {
    const config = join(root, 'claude_desktop_config.json');
    writeFileSync(
      config,
      JSON.stringify(
        {
          mcpServers: {
            everything: { command: 'node', args: [EVERYTHING, 'stdio'], env: { GREETING: 'hi' } },
          },
        },
        null,
        2,
      ),
    );
    const home = { HOME: process.env.HOME ?? '/', PATH: process.env.PATH ?? '' };
    // Installed from tarballs, not from a registry: the default launcher is this binary by its
    // path, never `npx -y mcp-sandbox@<version>` (npm may not have this build).
    const dry = await run(
      bin(),
      ['wrap', '--client', 'claude-desktop', '--config', config, '--all', '--dry-run'],
      { cwd: app, env: home },
    );
    expect(dry.stderr).not.toContain('"mcp-sandbox@');
    expect(dry.stderr).toContain(JSON.stringify(realpathSync(bin())));
    expect(dry.stderr).toContain('was not installed from a registry');

    // The launcher is the packed install's bin.js: nothing in its path says mcp-sandbox.
    await run(
      bin(),
      [
        'wrap',
        '--client',
        'claude-desktop',
        '--config',
        config,
        '--all',
        '--launcher',
        bin(),
        '--mount',
        `${REPO}:ro`,
      ],
      {
        cwd: app,
        env: home,
      },
    );
    const entry = (
      JSON.parse(readFileSync(config, 'utf8')) as {
        mcpServers: { everything: { command: string; args: string[]; env: Record<string, string> } };
      }
    ).mcpServers.everything;
    expect(entry.command).toBe(bin());
    expect(entry.args.slice(0, 2)).toEqual(['run', '--wrapped']);
    // Exactly what a client does: spawn command + args with the entry's env over its default one.
    const { client, stderr } = await sdkClient(
      entry.command,
      entry.args,
      { ...getDefaultEnvironment(), ...entry.env },
      root,
    );
    try {
      expect((await client.listTools()).tools).toHaveLength(13);
      const env = await client.callTool({ name: 'get-env', arguments: {} });
      expect(JSON.stringify(env.content)).toContain('GREETING');
    } finally {
      await client.close();
    }
    expect(stderr()).toContain('backend local, isolation os');
    // unwrap recognises the entry by its marker and restores it.
    await run(bin(), ['unwrap', '--client', 'claude-desktop', '--config', config, '--all'], {
      cwd: app,
      env: home,
    });
    const restored = JSON.parse(readFileSync(config, 'utf8')) as {
      mcpServers: { everything: { command: string } };
    };
    expect(restored.mcpServers.everything.command).toBe('node');
  });
});
