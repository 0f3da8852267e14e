import { describe, expect, it } from 'vitest';
import { parseRunWords, runOptionKeys } from '../src/commands/run.js';
import { JUDGED_OPTIONS, judgeRunWords, type VerdictContext } from '../src/config/run-verdict.js';

const noop = async () => {
  throw new Error('never created');
};
const ctx: VerdictContext = {
  backends: {
    local: { summary: 'os', isolation: 'os', create: noop },
    e2b: { summary: 'vm', isolation: 'microvm', create: noop },
    vm: { summary: 'worker', isolation: 'language', create: noop },
    none: { summary: 'none', isolation: 'none', create: noop },
    undeclared: { summary: 'says nothing', create: noop },
  },
  defaultBackend: 'local',
  env: { HOME: '/home/me' },
};
const judge = (words: string[], entry = { env: {}, envKeys: [] as string[] }, context = ctx) =>
  judgeRunWords(parseRunWords([...words, '--', 'srv']), entry, context);

describe("the judge of an entry's run options", () => {
  it('has weighed every option run has: a new one is not counted sandboxed until it is', () => {
    expect(runOptionKeys().filter((key) => !JUDGED_OPTIONS.has(key))).toEqual([]);
  });

  it.each([
    [['-bnone'], '--backend none: no sandbox'],
    [['--backend=vm'], '--backend vm: language isolation'],
    [['-b', 'undeclared'], '--backend undeclared: a backend that declares no isolation'],
    [['-b', 'nosuch'], '--backend nosuch: not a backend of this mcp-sandbox'],
    [['-b', '@evil/backend'], 'a module, which runs on the host'],
    [['-b', '/opt/x.js'], 'a module, which runs on the host'],
    [['--mount', '/:/host:ro'], '--mount / (ro): the root folder'],
    [['--mount', 'notes:/n:rw'], 'a relative host path'],
    [['--fs', './keys'], 'a relative host path'],
    [['--trace', 'trace.jsonl'], '--trace trace.jsonl: a relative path'],
    [['--pin-tools', '/home/me/.bashrc'], 'the host would write into a credentials or settings folder'],
    [['--backend-option', 'stateRoot=/tmp/x'], '--backend-option stateRoot=…'],
    [['--project-npmrc'], '--project-npmrc'],
  ])('%j is not sandboxed', (words, reason) => {
    const verdict = judge(words);
    expect(verdict.weakenedBy.join('\n')).toContain(reason);
  });

  it('the backend comes from --backend, else the entry env block, else the user env, else the default', () => {
    expect(judge(['-b', 'e2b'], { env: { MCP_SANDBOX_BACKEND: 'none' }, envKeys: [] }).weakenedBy).toEqual(
      [],
    );
    expect(judge([], { env: { MCP_SANDBOX_BACKEND: ' none ' }, envKeys: [] }).weakenedBy).toEqual([
      'MCP_SANDBOX_BACKEND=none in its "env" block: no sandbox, the server runs with your user, files and network',
    ]);
    const user = { ...ctx, env: { ...ctx.env, MCP_SANDBOX_BACKEND: 'vm' } };
    expect(judge([], undefined, user).weakenedBy[0]).toMatch(/^MCP_SANDBOX_BACKEND=vm in your environment/);
    expect(judge([]).backendIsDefault).toBe(true);
    expect(judge([]).backend).toBe('local');
  });

  it('what a sandboxed entry grants is said in words', () => {
    const verdict = judge(
      [
        '--allow-net',
        '*',
        '--allow-net',
        'api.github.com',
        '--env',
        'GITHUB_TOKEN',
        '--env',
        'OWN',
        '--install-env',
        'NPM_TOKEN=x',
        '--backend-option',
        'maxProcesses=64',
      ],
      { env: {}, envKeys: ['OWN'] },
    );
    expect(verdict.weakenedBy).toEqual([]);
    expect(verdict.grants).toEqual([
      'reaches any public address (--allow-net *)',
      'reaches api.github.com (--allow-net)',
      'holds GITHUB_TOKEN in clear (--env)',
      'its install step gets NPM_TOKEN (--install-env)',
    ]);
  });

  it('a bound secret is a grant said in words; a value on the command line is not sandboxed', () => {
    const bound = judge(['--allow-net', 'api.github.com', '--secret', 'GITHUB_TOKEN@api.github.com']);
    expect(bound.weakenedBy).toEqual([]);
    expect(bound.grants).toContain('puts GITHUB_TOKEN on the wire to api.github.com only (--secret)');
    expect(judge(['--secret', 'GITHUB_TOKEN=ghp_x@api.github.com']).weakenedBy).toEqual([
      '--secret: a value run refuses',
    ]);
  });
});
