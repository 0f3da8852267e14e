import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { UserNpmCache } from '../user-npm-cache.js';
import { installSteps } from './steps.js';

// The step only names the cache as a bind source: the validation itself is user-npm-cache.test.ts's.
const CACHE = { path: '/c' } as unknown as UserNpmCache;

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A stand-in npm on PATH that records each argv it gets, one JSON line per run. */
function fakeNpm(exitInstall = 0): { dir: string; log: string } {
  const dir = mkdtempSync(join(tmpdir(), 'npx-steps-'));
  dirs.push(dir);
  const log = join(dir, 'calls.jsonl');
  const npm = join(dir, 'npm');
  writeFileSync(
    npm,
    `#!${process.execPath}\nconst fs = require('node:fs');\n` +
      `fs.appendFileSync(${JSON.stringify(log)}, JSON.stringify(process.argv.slice(2)) + '\\n');\n` +
      `process.exit(process.argv[2] === 'install' ? ${exitInstall} : 0);\n`,
  );
  chmodSync(npm, 0o755);
  return { dir, log };
}

const config = {
  registry: 'https://registry.example/',
  cafile: undefined,
  strictSsl: true,
  cache: undefined,
};

describe('the fetch step with the user cache: one process, two npm commands', () => {
  it('passes a spec full of shell syntax to npm as one argument and runs none of it', () => {
    const { dir, log } = fakeNpm();
    const marker = join(dir, 'pwned');
    const spec = `x"; touch ${marker}; echo "$(touch ${marker})\`touch ${marker}\``;
    const steps = installSteps('/run/p', spec, config.registry, config, CACHE, { PATH: dir });
    expect(steps.map((step) => step.scripts)).toEqual([false, true]);
    const [program, ...args] = steps[0]!.argv;
    execFileSync(program!, args, { env: { PATH: `${dir}:/usr/bin:/bin` } });
    const calls = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as string[]);
    // Control: the script really ran npm twice, install with the spec verbatim, then ci.
    expect(calls.map((call) => call[0])).toEqual(['install', 'ci']);
    expect(calls[0]!.at(-1)).toBe(spec);
    expect(calls[0]).toContain('--ignore-scripts');
    expect(calls[1]).toContain('--ignore-scripts');
    expect(calls[1]).not.toContain(spec);
    expect(existsSync(marker)).toBe(false);
  });

  it('stops after a failed resolve, with npm exit status', () => {
    const { dir, log } = fakeNpm(7);
    const steps = installSteps('/run/p', 'pkg@1', config.registry, config, CACHE, { PATH: dir });
    const [program, ...args] = steps[0]!.argv;
    let status: number | null = 0;
    try {
      execFileSync(program!, args, { env: { PATH: `${dir}:/usr/bin:/bin` } });
    } catch (error) {
      status = (error as { status: number | null }).status;
    }
    expect(status).toBe(7);
    expect(readFileSync(log, 'utf8').trim().split('\n')).toHaveLength(1);
  });
});

describe("the fetch step with root's own cache, as root", () => {
  it('never binds it: resolve with the sandbox own cache, then ci with the seeded one, then the scripts', () => {
    const lent = { path: '/root/.npm', readOnly: true } as unknown as UserNpmCache;
    const steps = installSteps('/run/p', 'pkg@1.0.0', config.registry, config, lent, {
      PATH: '/nonexistent',
    });
    expect(steps.map((step) => [step.argv[1], step.scripts, step.seeded === lent])).toEqual([
      ['install', false, false],
      ['ci', false, true],
      ['rebuild', true, false],
    ]);
    for (const step of steps) {
      expect(step.cache).toBeUndefined();
      expect(step.argv).not.toContain('/root/.npm');
    }
    expect(steps[1]!.argv).toEqual(
      expect.arrayContaining(['--cache', '/run/mcp-sandbox/npm-cache', '--ignore-scripts']),
    );
    expect(steps[0]!.argv).toEqual(
      expect.arrayContaining(['--package-lock-only', '--ignore-scripts', 'pkg@1.0.0']),
    );
  });
});
