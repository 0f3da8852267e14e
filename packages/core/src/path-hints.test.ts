import { describe, expect, it } from 'vitest';
import type { Logger } from './logger.js';
import { combineHints, HostPathHints } from './path-hints.js';

function collect() {
  const said: string[] = [];
  const logger: Logger = { debug: () => {}, info: () => {}, warn: (m) => said.push(m), error: () => {} };
  return { said, logger };
}
const hint = { path: '/home/me/notes', flag: '--mount /home/me/notes' };

describe('HostPathHints', () => {
  it('names the flag once, for the path or something inside it, from stderr lines and errors', () => {
    const { said, logger } = collect();
    const hints = new HostPathHints([hint], logger);
    hints.line("Error: ENOENT: no such file or directory, open '/home/me/notes/today.md'");
    hints.line('again: /home/me/notes');
    hints.response({ error: { code: -1, message: 'cannot read /home/me/notes' } });
    expect(said).toEqual([
      'the server used /home/me/notes, which exists on this machine but is not in the sandbox: show it with --mount /home/me/notes',
    ]);
  });

  it('a longer name that only starts with the path is not the path', () => {
    const { said, logger } = collect();
    const hints = new HostPathHints([hint], logger);
    hints.line('open /home/me/notes-old/x and /x/home/me/notes');
    expect(said).toEqual([]);
  });

  it('finds a path cut between two chunks', () => {
    const { said, logger } = collect();
    const hints = new HostPathHints([hint], logger);
    hints.chunk(Buffer.from("ENOENT '/home/me/no"));
    hints.chunk(Buffer.from("tes/today.md'\n"));
    hints.end();
    expect(said).toHaveLength(1);
  });

  it('a failed tool result names it too; a successful one is not read', () => {
    const { said, logger } = collect();
    const hints = new HostPathHints([hint], logger);
    hints.response({ result: { content: [{ type: 'text', text: '/home/me/notes' }] } });
    expect(said).toEqual([]);
    hints.response({ result: { isError: true, content: [{ type: 'text', text: 'no /home/me/notes' }] } });
    expect(said).toHaveLength(1);
  });

  it('combineHints: none active is none; each active one sees every call', () => {
    const { said, logger } = collect();
    expect(combineHints([new HostPathHints([], logger)])).toBeUndefined();
    const both = combineHints([
      new HostPathHints([hint], logger),
      new HostPathHints([{ path: '/tmp/data', flag: '--mount /tmp/data' }], logger),
    ]);
    both?.line('/home/me/notes and /tmp/data');
    expect(said).toHaveLength(2);
  });
});
