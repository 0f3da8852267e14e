import { execFile } from 'node:child_process';
import {
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
import { BIN, EVERYTHING } from './helpers.js';

// The binary as a user installs it from a tarball: only the app is packed, and plain
// `npm install -g` installs it with no other file of this repository. Its workspace code is
// bundled; only third-party dependencies come from the registry.

const run = promisify(execFile);
const APP_DIR = fileURLToPath(new URL('..', import.meta.url));
const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const PNPM = ['--yes', 'pnpm@12.4.2'];

let root: string;
let prefix: string;
let tarball: string;
/** A project that installed the same tarball as a dependency (`npm install ./mcp-sandbox-*.tgz`). */
let project: string;
const env = () => ({ PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/' });
const installed = () => join(prefix, 'lib', 'node_modules', 'mcp-sandbox');
const bin = () => join(prefix, 'bin', 'mcp-sandbox');

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'mcp-sandbox-alone-'));
  const packs = join(root, 'tarballs');
  prefix = join(root, 'prefix');
  await run('npx', [...PNPM, 'pack', '--pack-destination', packs], { cwd: APP_DIR });
  const packed = readdirSync(packs).filter((n) => n.endsWith('.tgz'));
  expect(packed).toHaveLength(1);
  tarball = join(packs, packed[0] ?? '');
  await run(
    'npm',
    ['install', '-g', '--prefix', prefix, '--no-audit', '--no-fund', '--loglevel=error', tarball],
    // npm keeps the whole environment: this machine's proxy and TLS trust settings reach the registry.
    { cwd: root, maxBuffer: 16 * 2 ** 20 },
  );
  project = join(root, 'project');
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'a-project', private: true }));
  await run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', tarball], {
    cwd: project,
    maxBuffer: 16 * 2 ** 20,
  });
  process.stdout.write(
    `installed ${tarball} alone with npm install -g --prefix ${prefix}, and into ${project}\n`,
  );
}, 600_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('the app tarball alone, installed with npm install -g', () => {
  it('holds no workspace package: no @mcpsandbox dependency, none installed', () => {
    const pkg = JSON.parse(readFileSync(join(installed(), 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
    };
    expect(Object.keys(pkg.dependencies ?? {}).filter((n) => n.startsWith('@mcpsandbox/'))).toEqual([]);
    expect(existsSync(join(installed(), 'node_modules', '@mcpsandbox'))).toBe(false);
    expect(existsSync(join(prefix, 'lib', 'node_modules', '@mcpsandbox'))).toBe(false);
    // Installed as files, not a link back into the repository.
    expect(realpathSync(installed()).startsWith(realpathSync(prefix))).toBe(true);
  });

  it('--version prints the packed version', async () => {
    const version = (JSON.parse(readFileSync(join(APP_DIR, 'package.json'), 'utf8')) as { version: string })
      .version;
    const { stdout } = await run(bin(), ['--version'], { cwd: root, env: env() });
    expect(stdout).toBe(`${version}\n`);
    expect((await run(bin(), ['-v'], { cwd: root, env: env() })).stdout).toBe(`${version}\n`);
  });

  it('run: server-everything in the local sandbox through the installed binary', async () => {
    const transport = new StdioClientTransport({
      command: bin(),
      args: ['run', '--mount', `${REPO}:ro`, '--', 'node', EVERYTHING, 'stdio'],
      env: env(),
      cwd: root,
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const client = new Client({ name: 'alone-test', version: '1.0.0' }, { capabilities: {} });
    await client.connect(transport);
    try {
      expect((await client.listTools()).tools).toHaveLength(13);
      const echo = await client.callTool({ name: 'echo', arguments: { message: 'alone' } });
      expect(echo.content).toEqual([{ type: 'text', text: 'Echo: alone' }]);
    } finally {
      await client.close();
    }
    expect(stderr).toContain('backend local, isolation os');
  });

  it('inspect lists the same 13 tools', async () => {
    const { stdout } = await run(
      bin(),
      ['inspect', '--json', '--mount', `${REPO}:ro`, '--', 'node', EVERYTHING],
      { cwd: root, env: env() },
    );
    const report = JSON.parse(stdout) as { tools: unknown[]; isolation: string };
    expect(report.tools).toHaveLength(13);
    expect(report.isolation).toBe('os');
  });

  it('doctor runs every backend probe from the bundle, the vm worker included', async () => {
    // doctor exits non-zero only when the default backend fails; the vm line is a real trial.
    const { stdout } = await run(bin(), ['doctor'], { cwd: root, env: env() });
    expect(stdout).toMatch(/✓ backend local \(default\): usable/);
    expect(stdout).toMatch(/✓ backend vm: usable: ran a trial program/);
  });
});

describe('wrap with the default launcher writes entries a client can start', () => {
  // README's Install section: the tarball installed globally or into a project, or a source build.
  // None came from the registry, so none may be started as `npx -y mcp-sandbox@<version>`: npm
  // does not have this build. Each entry is started exactly as a client starts it.
  const starters: Array<[string, () => { argv: string[]; cwd: string }]> = [
    ['a global install of the tarball', () => ({ argv: [bin()], cwd: root })],
    [
      'a project install of the tarball',
      () => ({ argv: [join(project, 'node_modules', '.bin', 'mcp-sandbox')], cwd: project }),
    ],
    ['a source build', () => ({ argv: [process.execPath, BIN], cwd: root })],
  ];

  it.each(starters)(
    '%s',
    async (_, starter) => {
      const { argv, cwd } = starter();
      const home = mkdtempSync(join(root, 'home-'));
      const config = join(home, 'claude_desktop_config.json');
      writeFileSync(
        config,
        JSON.stringify({ mcpServers: { everything: { command: 'node', args: [EVERYTHING, 'stdio'] } } }),
      );
      const [command = '', ...pre] = argv;
      const wrapped = await run(
        command,
        [...pre, 'wrap', '--client', 'claude-desktop', '--config', config, '--all', '--mount', `${REPO}:ro`],
        { cwd, env: { HOME: home, PATH: process.env.PATH ?? '' } },
      );
      expect(wrapped.stderr).toContain('everything: wrapped');
      const entry = (
        JSON.parse(readFileSync(config, 'utf8')) as {
          mcpServers: { everything: { command: string; args: string[]; env?: Record<string, string> } };
        }
      ).mcpServers.everything;
      const transport = new StdioClientTransport({
        command: entry.command,
        args: entry.args,
        env: { ...getDefaultEnvironment(), ...entry.env },
        cwd: home,
        stderr: 'pipe',
      });
      let stderr = '';
      transport.stderr?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      const client = new Client({ name: 'wrapped-entry', version: '1.0.0' }, { capabilities: {} });
      try {
        await client.connect(transport);
        expect((await client.listTools()).tools).toHaveLength(13);
      } catch (error) {
        throw new Error(
          `${entry.command} ${entry.args.join(' ')} did not start: ${(error as Error).message}\n${stderr}`,
        );
      } finally {
        await client.close();
      }
      expect(stderr).toContain('backend local, isolation os');
    },
    60_000,
  );
});
