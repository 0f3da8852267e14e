import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { shellQuote, toExecLine } from './shell.js';

const NASTY = [
  'plain',
  'two words',
  "it's",
  '"double"',
  '$HOME',
  '`id`',
  '*',
  '',
  '--flag=value',
  'line\nbreak',
  'tab\there',
  '€ ünïcode',
  "'; echo injected; '",
  '\\',
];

/** What bash receives as arguments for a command line. */
function argsSeenBy(line: string): string[] {
  const out = execFileSync('bash', ['-c', `set -- ${line}; printf '%s\\0' "$@"`]).toString();
  return out.split('\0').slice(0, -1);
}

describe('shellQuote', () => {
  it('passes every argument through bash unchanged, as one word each', () => {
    expect(argsSeenBy(NASTY.map(shellQuote).join(' '))).toEqual(NASTY);
  });

  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('an argument cannot run a command (attack), while the same text unquoted does (control)', () => {
    dir = mkdtempSync(join(tmpdir(), 'quote-'));
    const marker = join(dir, 'pwned');
    const attack = `$(touch ${marker})`;
    argsSeenBy(shellQuote(attack));
    expect(existsSync(marker)).toBe(false);
    argsSeenBy(attack);
    expect(existsSync(marker)).toBe(true);
  });

  it('refuses NUL bytes and empty commands', () => {
    expect(() => shellQuote('a\0b')).toThrow(/NUL/);
    expect(() => toExecLine([])).toThrow(/empty/);
  });

  it('execs the command so that it, not a shell, is the process envd tracks', () => {
    expect(toExecLine(['node', 'server.js', 'a b'])).toBe("exec -- node server.js 'a b'");
    expect(execFileSync('bash', ['-c', toExecLine(['sh', '-c', 'echo $0', '-x'])]).toString()).toBe('-x\n');
  });
});
