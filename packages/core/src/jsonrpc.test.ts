import { describe, expect, it } from 'vitest';
import {
  errorResponseLine,
  headHasMethod,
  idsLooselyEqual,
  idTextFromHead,
  inspectLargeLine,
  inspectMessage,
  rawTopLevelValue,
  readStrict,
} from './jsonrpc.js';

describe('inspectMessage', () => {
  it('classifies requests, notifications, responses and noise', () => {
    expect(inspectMessage('{"jsonrpc":"2.0","id":1,"method":"ping"}')).toMatchObject({
      kind: 'request',
      method: 'ping',
      idKey: 'n:1',
      idText: '1',
    });
    expect(inspectMessage('{"jsonrpc":"2.0","method":"notifications/initialized"}').kind).toBe(
      'notification',
    );
    expect(inspectMessage('{"jsonrpc":"2.0","id":"a","result":{}}')).toMatchObject({
      kind: 'response',
      idKey: 's:a',
    });
    expect(inspectMessage('{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"x"}}').kind).toBe('response');
    expect(inspectMessage('not json').kind).toBe('invalid');
    expect(inspectMessage('[1,2]').kind).toBe('batch');
    expect(inspectMessage('42').kind).toBe('other');
  });

  it('keeps an integer id past 2^53 exactly as sent', () => {
    const info = inspectMessage('{"jsonrpc":"2.0","method":"ping","id":9007199254740993}');
    expect(info.idText).toBe('9007199254740993');
    const answer = inspectMessage('{"jsonrpc":"2.0","id":9007199254740993,"result":{}}');
    expect(answer.idKey).toBe(info.idKey);
    expect(inspectMessage('{"id":9007199254740992,"result":1}').idKey).not.toBe(info.idKey);
    // 1e400 parses to Infinity, which is not JSON: an error answer must echo the text as sent.
    expect(inspectMessage('{"id":1e400,"result":1}').idText).toBe('1e400');
    expect(inspectLargeLine(Buffer.from('{"id":1e400,"result":1}')).idText).toBe('1e400');
  });

  it('does not confuse a nested id with the top-level one', () => {
    expect(rawTopLevelValue('{"params":{"id":5},"id":12345678901234567890}', 'id')).toBe(
      '12345678901234567890',
    );
    expect(rawTopLevelValue('{"a":"}\\"id\\":1","id":"x"}', 'id')).toBe('"x"');
  });

  it('finds the id and method in the head of a cut message', () => {
    const head = '{"jsonrpc":"2.0","id":"req-1","method":"tools/call","params":{"text":"aaaa';
    expect(idTextFromHead(head)).toBe('"req-1"');
    expect(headHasMethod(head)).toBe(true);
    expect(idTextFromHead('{"jsonrpc":"2.0","result":{"x":"aaa')).toBeUndefined();
    expect(idTextFromHead('{"id":{"evil":1}}')).toBeUndefined();
  });

  it('builds error responses that echo the id text verbatim', () => {
    const line = errorResponseLine('9007199254740993', -32000, 'gone "now"').toString();
    expect(line).toBe(
      '{"jsonrpc":"2.0","id":9007199254740993,"error":{"code":-32000,"message":"gone \\"now\\""}}\n',
    );
  });
});

describe('inspectLargeLine', () => {
  const big = 'x'.repeat(100_000);
  const classify = (text: string) => inspectLargeLine(Buffer.from(text));

  it('agrees with inspectMessage on ids at the start and at the end', () => {
    const cases = [
      `{"jsonrpc":"2.0","id":7,"result":{"text":"${big}"}}`,
      `{"result":{"text":"${big}"},"jsonrpc":"2.0","id":7}`,
      `{"result":{"text":"${big}"},"jsonrpc":"2.0","id":"é-1"}`,
      `{"result":{"text":"${big}"},"jsonrpc":"2.0","id":9007199254740993}`,
      `{"jsonrpc":"2.0","id":1.0,"method":"tools/call","params":{"a":"${big}"}}`,
      `{"jsonrpc":"2.0","method":"notifications/message","params":{"a":"${big}"}}`,
    ];
    for (const text of cases) {
      const slow = inspectMessage(text);
      const fast = classify(text);
      expect({ kind: fast.kind, idKey: fast.idKey, idText: fast.idText, method: fast.method }).toEqual({
        kind: slow.kind,
        idKey: slow.idKey,
        idText: slow.idText,
        method: slow.method,
      });
    }
  });

  it('is not fooled by an id inside a nested object or a string', () => {
    expect(classify(`{"result":{"text":"${big}","id":5}}`).kind).toBe('other');
    expect(classify(`{"result":{"text":"${big}, \\"id\\":5}"}}`).kind).toBe('other');
    expect(classify(`{"result":[{"id":5}],"pad":"${big}"}`).kind).toBe('other');
  });

  it('calls a line that does not open and close as an object invalid', () => {
    expect(classify(`log: ${big}`).kind).toBe('invalid');
    expect(classify(`{"id":1,"result":"${big}"`).kind).toBe('invalid');
    expect(classify(`  {"id":1,"result":"${big}"}  `).kind).toBe('response');
  });
});

describe('readStrict', () => {
  const read = (text: string | Buffer) => readStrict(Buffer.isBuffer(text) ? text : Buffer.from(text));

  it('reads a plain response, with the raw text of its id', () => {
    const r = read('{"jsonrpc":"2.0","id":1.0,"result":{}}');
    expect(r.info).toMatchObject({ kind: 'response', idKey: 'n:1' });
    expect(r.idRaw).toBe('1.0');
  });

  it('refuses every line that clients could read differently', () => {
    const cases: Array<[string | Buffer, RegExp]> = [
      ['{"id":"x","result":{},"id":1}', /duplicate key "id"/],
      ['{"id":1,"result":{"tools":[{"name":"a","name":"b"}]}}', /duplicate key "name"/],
      ['{"id":1,"error":{"code":1,"message":"m"},"\\u005f_proto__":{"result":1}}', /__proto__/],
      ['{"id":1,"method":"x","result":{}}', /both a request and a response/],
      ['[{"id":1,"result":{}}]', /batch holding a response/],
      ['{"id":null,"error":{"code":1,"message":"m"}}', /not a string or a number/],
      [`{"id":1,"result":${'['.repeat(2000)}${']'.repeat(2000)}}`, /nesting deeper than 1000/],
      [Buffer.concat([Buffer.from('{"id":1,"result":"'), Buffer.from([0xff]), Buffer.from('"}')]), /UTF-8/],
    ];
    for (const [text, reason] of cases) {
      const r = read(text);
      expect(r.info).toBeUndefined();
      expect(r.ambiguity).toMatch(reason);
    }
    expect(read('{"id":"x","result":{},"id":1}').idTexts).toEqual(['"x"', '1']);
    // A batch of answers names the requests it may answer, so they get an error instead.
    expect(read('[{"id":1,"result":{}},{"id":"a","error":{}},{"id":2,"method":"m"}]')).toMatchObject({
      idTexts: ['1', '"a"'],
      mayAnswer: true,
    });
    expect(read('[{"id":2,"method":"m"}]')).toMatchObject({ idTexts: [], mayAnswer: false });
  });

  it('matches ids the way lenient clients do', () => {
    expect(idsLooselyEqual('"1"', '1')).toBe(true);
    expect(idsLooselyEqual('" 1 "', '1')).toBe(true);
    expect(idsLooselyEqual('"0x1"', '1')).toBe(true);
    expect(idsLooselyEqual('""', '0')).toBe(true);
    expect(idsLooselyEqual('9007199254740993', '9007199254740992')).toBe(true);
    expect(idsLooselyEqual('"a"', '1')).toBe(false);
    expect(idsLooselyEqual('2', '1')).toBe(false);
  });
});
