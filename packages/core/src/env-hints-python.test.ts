import { describe, expect, it } from 'vitest';
import { fieldVariable, WithheldEnvHints } from './env-hints.js';
import type { Logger } from './logger.js';

function setup(withheld: string[]) {
  const said: string[] = [];
  const logger: Logger = { debug() {}, info() {}, warn: (m) => said.push(m), error() {} };
  return { hints: new WithheldEnvHints(withheld, logger), said };
}
const hint = (name: string) => `the server asked for ${name}, which was withheld: pass it with --env ${name}`;
const PYDANTIC = [
  'pydantic_core._pydantic_core.ValidationError: 2 validation errors for Settings',
  'jira_url',
  '  Field required [type=missing, input_value={}, input_type=dict]',
  '    For further information visit https://errors.pydantic.dev/2.13/v/missing',
  'api_key',
  '  Field required [type=missing, input_value={}, input_type=dict]',
  '',
].join('\n');

describe('pydantic-settings "Field required"', () => {
  it('the field, whatever the case, or the one name ending in it (an env_prefix); never a guess', () => {
    const names = new Set(['JIRA_URL', 'BRAVE_API_KEY', 'OPENAI_API_KEY', 'TOKEN', 'MY_TOKEN']);
    expect(fieldVariable('jira_url', names)).toBe('JIRA_URL');
    expect(fieldVariable('api_key', names)).toBeUndefined();
    expect(fieldVariable('api_key', new Set(['BRAVE_API_KEY']))).toBe('BRAVE_API_KEY');
    expect(fieldVariable('token', names)).toBe('TOKEN');
    expect(fieldVariable('url', new Set(['XURL']))).toBeUndefined();
  });

  it('reads the field line before it, one byte a chunk or whole, with CRLF', () => {
    for (const text of [PYDANTIC, PYDANTIC.replace(/\n/g, '\r\n')]) {
      const { hints, said } = setup(['JIRA_URL', 'BRAVE_API_KEY']);
      for (const byte of Buffer.from(text)) hints.chunk(Uint8Array.of(byte));
      hints.end();
      expect(said).toEqual([hint('JIRA_URL'), hint('BRAVE_API_KEY')]);
    }
  });

  it('in a tool error text too; a field line that is not alone, or is too long, names nothing', () => {
    const { hints, said } = setup(['JIRA_URL']);
    hints.response({ id: 1, result: { isError: true, content: [{ type: 'text', text: PYDANTIC }] } });
    expect(said).toEqual([hint('JIRA_URL')]);
    const other = setup(['JIRA_URL']);
    other.hints.chunk(Buffer.from('x jira_url\n  Field required [type=missing]\n'));
    other.hints.chunk(Buffer.from(`${' '.repeat(300)}jira_url\n  Field required [type=missing]\n`));
    other.hints.end();
    expect(other.said).toEqual([]);
  });
});
