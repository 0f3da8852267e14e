import { describe, expect, it } from 'vitest';
import { hintableNames, WithheldEnvHints } from './env-hints.js';
import type { Logger } from './logger.js';

function setup(withheld: string[]) {
  const said: string[] = [];
  const logger: Logger = { debug() {}, info() {}, warn: (m) => said.push(m), error() {} };
  return { hints: new WithheldEnvHints(withheld, logger), said };
}
const bytes = (text: string) => Buffer.from(text);
const hint = (name: string) => `the server asked for ${name}, which was withheld: pass it with --env ${name}`;

describe('WithheldEnvHints', () => {
  it('names a withheld variable once, after the line it came in ends', () => {
    const { hints, said } = setup(['BRAVE_API_KEY', 'OTHER']);
    hints.chunk(bytes('BRAVE_API_KEY environment variable'));
    expect(said).toEqual([]);
    hints.chunk(bytes(' is required\nBRAVE_API_KEY again\n'));
    expect(said).toEqual([hint('BRAVE_API_KEY')]);
  });

  it('finds a name split across chunks, and only whole identifiers', () => {
    const { hints, said } = setup(['BRAVE_API_KEY', 'API_KEY', 'KEY']);
    hints.chunk(bytes('MY_BRAVE_API_KEY x BRAVE_'));
    hints.chunk(bytes('API_KEY'));
    hints.end();
    expect(said).toEqual([hint('BRAVE_API_KEY')]);
  });

  it('an identifier longer than every name never matches, however it is chunked', () => {
    const { hints, said } = setup(['KEY']);
    hints.chunk(bytes('A'.repeat(100)));
    hints.chunk(bytes('_KEY\n'));
    hints.end();
    expect(said).toEqual([]);
  });

  it('searches error messages and isError tool results, nothing else', () => {
    const { hints, said } = setup(['A_TOKEN', 'B_TOKEN', 'C_TOKEN']);
    hints.response({ id: 1, result: { content: [{ type: 'text', text: 'A_TOKEN' }] } });
    hints.response({ id: 2, error: { code: -32000, message: 'B_TOKEN missing' } });
    hints.response({ id: 3, result: { isError: true, content: [null, { type: 'text', text: 'C_TOKEN?' }] } });
    expect(said).toEqual([hint('B_TOKEN'), hint('C_TOKEN')]);
  });

  it('leaves out names that are not variable names and those the sandbox sets itself', () => {
    expect(
      hintableNames(['PATH', 'HOME', 'LC_ALL', 'HTTPS_PROXY', 'A\u001bB', 'X=Y', '_', 'GH_TOKEN']),
    ).toEqual(['GH_TOKEN']);
    const { hints, said } = setup(['PATH', 'A\u001bB']);
    expect(hints.active).toBe(false);
    hints.line('PATH A\u001bB');
    expect(said).toEqual([]);
  });
});

describe('WithheldEnvHints on a backend that substitutes --secret', () => {
  function substituting(withheld: string[]) {
    const said: string[] = [];
    const events: Array<Record<string, unknown>> = [];
    const logger: Logger = { debug() {}, info() {}, warn: (m) => said.push(m), error() {} };
    const trace = {
      event: (type: string, fields: Record<string, unknown>) => events.push({ type, ...fields }),
    };
    const hints = new WithheldEnvHints(withheld, logger, trace as never, { suggestSecrets: true });
    return { hints, said, events };
  }

  it('suggests --secret with its grant for a variable whose host is known, else --env', () => {
    const { hints, said, events } = substituting(['BRAVE_API_KEY', 'ES_URL']);
    hints.line('BRAVE_API_KEY environment variable is required; ES_URL too');
    expect(said).toEqual([
      'the server asked for BRAVE_API_KEY, which was withheld: pass it with --secret BRAVE_API_KEY@api.search.brave.com --allow-net api.search.brave.com (the server gets a stand-in, the real value goes only to api.search.brave.com), or with --env BRAVE_API_KEY',
      hint('ES_URL'),
    ]);
    expect(events).toEqual([
      { type: 'env-hint', name: 'BRAVE_API_KEY', flag: '--secret BRAVE_API_KEY@api.search.brave.com' },
      { type: 'env-hint', name: 'ES_URL', flag: '--env ES_URL' },
    ]);
  });

  it('keeps --env for a known variable when the backend does not substitute', () => {
    const { hints, said } = setup(['BRAVE_API_KEY']);
    hints.line('BRAVE_API_KEY is required');
    expect(said).toEqual([hint('BRAVE_API_KEY')]);
  });
});
