import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { denialLine, logStreamArgs, MAX_LOG_LINE, parseDenialLine } from '../src/log/denials.js';

// `log stream --style ndjson` output in the shape macOS 14/15 prints it (one event a line,
// the kernel's message and the profile's tag on two lines of eventMessage), with hostile paths.
const lines = readFileSync(new URL('fixtures/log-stream.ndjson', import.meta.url), 'utf8').split('\n');
const TAG = 'golden-session';
const denials = lines.map((line) => parseDenialLine(line, TAG)).filter((d) => d !== undefined);

describe('denials from the unified log', () => {
  it('asks log stream for this session’s tag only', () => {
    expect(logStreamArgs(TAG)).toEqual([
      'stream',
      '--style',
      'ndjson',
      '--predicate',
      'eventMessage ENDSWITH "mcp-sandbox:golden-session"',
    ]);
    expect(() => logStreamArgs('x" OR TRUEPREDICATE OR "')).toThrow();
  });

  it('reads this session’s denials and no other session’s (not even a tag it is a prefix of)', () => {
    expect(denials.map((d) => `${d.op} ${d.target}`)).toEqual([
      'file-read-data /Users/alice/data/report.csv',
      'file-write-create /Users/alice/project/.git/hooks/pre-commit',
      'mach-lookup com.apple.coreservices.launchservicesd',
      'network-outbound 93.184.215.14:443',
      'file-read-data /System/Volumes/Data/Users/alice/.ssh/id_ed25519',
      'file-read-data /Users/alice/\u001b]52;c;aGk=\u0007x',
      'file-read-data /Users/alice/my notes/today.md',
      "file-read-data /Users/alice/it's.txt",
    ]);
  });

  it('each becomes one line naming the grant, built only from a validated path', () => {
    const text = denials.map(denialLine);
    expect(text[0]).toBe(
      'macOS sandbox refused file-read-data /Users/alice/data/report.csv (node, pid 4242); to allow it: --mount /Users/alice/data/report.csv:/Users/alice/data/report.csv:ro',
    );
    // A refused write to a git hook: a rw mount of the hook itself would lift the rule, so no flag.
    expect(text[1]).toContain('stay read-only: no setting allows writing them');
    expect(text[1]).not.toContain('--mount');
    expect(text[2]).toContain('no setting allows other host services');
    expect(text[3]).toContain('--allow-net');
    expect(text[4]).toContain('never shown');
    expect(text[6]).toContain("--mount '/Users/alice/my notes/today.md:/Users/alice/my notes/today.md:ro'");
    for (const line of text) {
      // biome-ignore lint/suspicious/noControlCharactersInRegex: no control character may reach the terminal
      expect(line).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
      expect(line.split('\n')).toHaveLength(1);
    }
    // A path with terminal escapes or a quote gets no flag: it could not be pasted safely.
    expect(text[5]).toContain('\\x1b]52');
    expect(text[5]).not.toContain('--mount');
    expect(text[7]).not.toContain('--mount');
  });

  it('an oversized or broken line is skipped', () => {
    const huge = JSON.stringify({
      eventMessage: `Sandbox: node(1) deny(1) file-read-data /${'a'.repeat(MAX_LOG_LINE)}\nmcp-sandbox:${TAG}`,
    });
    expect(parseDenialLine(huge, TAG)).toBeUndefined();
    expect(parseDenialLine('{"eventMessage": 3}', TAG)).toBeUndefined();
  });
});
