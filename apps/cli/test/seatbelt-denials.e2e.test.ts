import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { spawnBin, traceRecords } from './helpers.js';

// macOS denials, end to end on Linux: the seatbelt engine (stand-in sandbox-exec, which enforces
// nothing) reads recorded `log stream` output for its session's tag; each denial becomes one
// stderr line naming the grant, a trace record, and a flag from `trace --suggest`.

const BACKEND = fileURLToPath(new URL('./fixtures/seatbelt-recorded-log-backend.mjs', import.meta.url));

describe('seatbelt denials → stderr, trace, trace --suggest', () => {
  it('a server that dies on refusals says so, and the trace suggests only safe --mount flags', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'seatbelt-denials-'));
    const trace = join(dir, 'trace.jsonl');
    const env = { PATH: process.env.PATH, HOME: dir, TMPDIR: dir };
    const run = spawnBin(
      [
        'run',
        '--backend',
        BACKEND,
        '--trace',
        trace,
        '--require-isolation',
        'os',
        '--',
        process.execPath,
        '-e',
        'setTimeout(() => process.exit(1), 300)',
      ],
      env,
    );
    run.child.stdin.end();
    const result = await run.result;
    expect(result.code).not.toBe(0);
    // The isolation line: the engine, the kernel, what it enforces and what it leaves.
    expect(result.stderr).toMatch(
      /backend seatbelt, isolation os: Seatbelt \(sandbox-exec\) with a profile generated per process, Darwin \S+: reads only .*no pid namespace/,
    );
    const refusals = result.stderr
      .split('\n')
      .filter((l) => l.startsWith('mcp-sandbox: warning: macOS sandbox refused'));
    expect(refusals).toContain(
      'mcp-sandbox: warning: macOS sandbox refused file-read-data /Users/alice/data/report.csv (node, pid 4242); to allow it: --mount /Users/alice/data/report.csv:/Users/alice/data/report.csv:ro',
    );
    // A refused write to a git hook: no flag (a rw mount of the hook would lift the rule).
    expect(refusals.find((l) => l.includes('.git/hooks'))).toContain('stay read-only');
    // Another session's denials are not this one's; terminal escapes never reach stderr.
    expect(result.stderr).not.toContain('/etc/passwd');
    expect(result.stderr).not.toContain('\u001b]52');
    expect(result.stderr).toMatch(/the server exited after \d+ macOS sandbox refusal\(s\)/);

    const denials = traceRecords(trace).filter((r) => r.type === 'sandbox.seatbelt-denial');
    expect(denials.map((r) => r.target)).toContain('/Users/alice/data/report.csv');
    expect(denials.length).toBeGreaterThanOrEqual(refusals.length);

    const suggested = spawnBin(['trace', trace, '--suggest'], env);
    const out = (await suggested.result).stdout.toString().split('\n').filter(Boolean);
    const strict = spawnBin(
      ['run', '--backend', BACKEND, '--require-isolation', 'microvm', '--', 'true'],
      env,
    );
    strict.child.stdin.end();
    const refused = await strict.result;
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('--require-isolation microvm: backend seatbelt gives isolation os');
    expect(out).toContain('--mount /Users/alice/data/report.csv:/Users/alice/data/report.csv:ro');
    expect(out).toContain("--mount '/Users/alice/my notes/today.md:/Users/alice/my notes/today.md:ro'");
    // No flag for the firmlink spelling, an escape sequence, or a quote that would end the quoting.
    const printed = out.join('\n');
    for (const never of ['System/Volumes/Data', '\u001b', "it's", '.git/hooks'])
      expect(printed).not.toContain(never);
  });
});
