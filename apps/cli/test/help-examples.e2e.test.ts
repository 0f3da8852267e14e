import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { extractBlocks } from './docs-blocks.js';
import { FAKE_SERVER, line, spawnBin, stdoutMessages } from './helpers.js';

// A newcomer copies an example line from `--help` or the docs. Each such line must start this
// binary (`mcp-sandbox …`), or name a version of npm's `mcp-sandbox` explicitly: a bare
// `npx -y mcp-sandbox` starts npm's old 0.2 line, which fails with "E2B_API_KEY is not set".

const ROOT = join(import.meta.dirname, '..', '..', '..');
const COMMANDS = ['run', 'serve', 'wrap', 'unwrap', 'ls', 'doctor', 'inspect', 'trace', 'state', 'update'];
/** `npx -y mcp-sandbox` with no `@<version>` after it. */
const UNVERSIONED = /\bnpx\s+(?:-y\s+|--yes\s+)*mcp-sandbox(?![@\w-])/;
const PING = { jsonrpc: '2.0', id: 1, method: 'ping' };
const scratch = mkdtempSync(join(tmpdir(), 'help-examples-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function examples(command: string): Promise<string[]> {
  const result = await spawnBin([command, '--help']).result;
  expect(result.code).toBe(0);
  const text = result.stdout.toString();
  const at = text.indexOf('\nExamples:\n');
  if (at === -1) return [];
  const lines: string[] = [];
  for (const entry of text.slice(at + '\nExamples:\n'.length).split('\n')) {
    if (!entry.startsWith('  ')) break;
    lines.push(entry.trim());
  }
  return lines;
}

/** The words of a `mcp-sandbox run …` example after `run` (the examples quote nothing). */
function runArguments(example: string): string[] | undefined {
  const words = example.split(/\s+/);
  const at = words.findIndex((word, i) => word === 'mcp-sandbox' && words[i + 1] === 'run');
  return at === -1 ? undefined : words.slice(at + 2);
}

describe('example command lines start this binary', () => {
  it('no --help example starts `npx -y mcp-sandbox` without a version', async () => {
    const all: string[] = [];
    for (const command of COMMANDS) all.push(...(await examples(command)));
    expect(all.length).toBeGreaterThan(3);
    expect(all.filter((example) => UNVERSIONED.test(example))).toEqual([]);
    for (const example of all.filter((text) => text.startsWith('claude mcp add'))) {
      if (example.includes('--transport http')) continue;
      expect(example).toMatch(/ -- mcp-sandbox (run|serve) /);
    }
  });

  it('no code block of README, docs/ or a package README starts `npx -y mcp-sandbox` without a version', () => {
    const files = [
      'README.md',
      ...readdirSync(join(ROOT, 'docs'))
        .filter((name) => name.endsWith('.md'))
        .map((name) => `docs/${name}`),
      ...readdirSync(join(ROOT, 'packages')).map((name) => `packages/${name}/README.md`),
      'apps/cli/README.md',
    ];
    const offending = files
      .flatMap((file) => {
        try {
          return extractBlocks(ROOT, file);
        } catch {
          return [];
        }
      })
      // The migration guide shows the old line on purpose, pinned to 0.2.1.
      .filter((block) => UNVERSIONED.test(block.body))
      .map((block) => `${block.file}:${block.line}`);
    expect(offending).toEqual([]);
  });

  it("run --help's GitHub example forwards the variable the server reads and grants its API host", async () => {
    const github = (await examples('run')).find((example) => example.includes('server-github'));
    expect(github).toBeDefined();
    expect(github).toContain('--env GITHUB_PERSONAL_ACCESS_TOKEN');
    expect(github).toContain('--allow-net api.github.com');
  });

  it("every `mcp-sandbox run` example's options are accepted by run, and a session runs with them", async () => {
    const lines = (await examples('run')).flatMap((example) => runArguments(example) ?? []).length;
    expect(lines).toBeGreaterThan(0);
    for (const example of await examples('run')) {
      const args = runArguments(example);
      if (!args) continue;
      const dashes = args.indexOf('--');
      expect(dashes, example).toBeGreaterThanOrEqual(0);
      // The example's own options, with the fake server in place of the real one and the none
      // backend (the options are what is checked here; the servers are tested elsewhere).
      const options = args
        .slice(0, dashes)
        .map((word) => (word === 'session.jsonl' ? join(scratch, word) : word))
        .filter((word, i, all) => word !== '--backend' && all[i - 1] !== '--backend');
      // A stand-in for the variable the GitHub example forwards: set, as the user would have it.
      const env = { ...process.env, GITHUB_PERSONAL_ACCESS_TOKEN: 'ghp_stand-in-for-the-example' };
      const run = spawnBin(
        ['run', ...options, '--backend', 'none', '--', process.execPath, FAKE_SERVER],
        env,
      );
      run.child.stdin.end(line(PING));
      const result = await run.result;
      expect(result.code, `${example}\n${result.stderr}`).toBe(0);
      expect(stdoutMessages(result.stdout).map((message) => message.id)).toEqual([1]);
    }
  });
});
