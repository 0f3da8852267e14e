import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { check, parseJson, RUNS, SEED } from '../test/property.js';
import { LineFramer } from './framing.js';
import { idsLooselyEqual, inspectLargeLine, inspectMessage, readStrict } from './jsonrpc.js';
import { JsonlTrace } from './trace.js';
import { readTrace } from './trace-summary.js';

// Every parser that reads bytes from the sandbox, against generated input. The suite's name
// carries the seed: replay a failure with FC_SEED=<seed>.

const space = fc.constantFrom('', ' ', '\t', '\r\n', '  ');
const idText = fc.oneof(
  fc.integer({ min: -3, max: 3 }).map(String),
  fc.constantFrom('9007199254740993', '9007199254740992', '1.0', '1e0', '-0', '1e400', '0.5'),
  fc.string({ maxLength: 4 }).map((s) => JSON.stringify(s)),
  fc.constantFrom('"1"', '" 1"', '"0x1"', '"\\u0031"', '"\\ud800"', 'null', 'true', '[1]', '{"id":1}'),
);
const keyText = fc.constantFrom(
  '"id"',
  '"\\u0069d"',
  '"method"',
  '"me\\u0074hod"',
  '"result"',
  '"error"',
  '"jsonrpc"',
  '"params"',
  '"__proto__"',
  '"x"',
  '"i\\"d"',
);
const valueText = fc.oneof(
  idText,
  fc.constantFrom('"tools/list"', '"ping"', '{"tools":[]}', '{"code":1,"message":"m"}', '"2.0"'),
  fc.json({ maxDepth: 3 }),
  fc.integer({ min: 0, max: 6000 }).map((n) => `"${'x'.repeat(n)}"`),
);
const member = fc
  .tuple(keyText, space, space, valueText)
  .map(([key, before, after, value]) => `${key}${before}:${after}${value}`);
/** Objects shaped like JSON-RPC, with duplicate keys, escapes in keys, odd ids and big members. */
const rpcLine = fc
  .tuple(space, fc.array(fc.tuple(member, space), { maxLength: 6 }), space)
  .map(([lead, members, trail]) => `${lead}{${members.map(([m, s]) => `${m}${s}`).join(',')}}${trail}`);

/** Kind and id of a parsed value, as the bridge defines them, for any reader's result. */
function reading(value: unknown): { kind: string; id?: unknown; method?: unknown } {
  if (Array.isArray(value)) return { kind: 'batch' };
  if (typeof value !== 'object' || value === null) return { kind: 'other' };
  const m = value as Record<string, unknown>;
  const has = (k: string) => Object.hasOwn(m, k);
  const method = typeof m.method === 'string' ? m.method : undefined;
  const hasId = has('id') && (typeof m.id === 'string' || typeof m.id === 'number');
  if (method !== undefined)
    return hasId ? { kind: 'request', method, id: m.id } : { kind: 'notification', method };
  if (hasId && (has('result') || has('error'))) return { kind: 'response', id: m.id };
  return { kind: 'other' };
}

describe(`parsers of sandbox bytes, property-based (seed ${SEED}, ${RUNS} cases each)`, () => {
  it("inspectLargeLine: when it says it is certain, its kind, method and id are JSON.parse's", () => {
    let certain = 0;
    check(
      fc.property(rpcLine, (text) => {
        const slow = inspectMessage(text);
        const fast = inspectLargeLine(Buffer.from(text));
        if (slow.kind === 'invalid' || !fast.certain) return;
        certain++;
        expect({ kind: fast.kind, method: fast.method, idKey: fast.idKey, idText: fast.idText }).toEqual({
          kind: slow.kind,
          method: slow.method,
          idKey: slow.idKey,
          idText: slow.idText,
        });
      }),
    );
    // Not vacuous: a good share of the lines are read with certainty.
    expect(certain).toBeGreaterThan(RUNS / 10);
  });

  it('inspectLargeLine and readStrict never throw, whatever the bytes', () => {
    const bytes = fc.oneof(
      fc.uint8Array({ maxLength: 300 }),
      rpcLine.map((t) => Buffer.from(t)),
      fc.tuple(rpcLine, fc.nat(), fc.uint8Array({ minLength: 1, maxLength: 3 })).map(([t, at, junk]) => {
        const b = Buffer.from(t);
        const cut = at % (b.length + 1);
        return Buffer.concat([b.subarray(0, cut), junk, b.subarray(cut)]);
      }),
    );
    check(
      fc.property(bytes, (b) => {
        const buf = Buffer.from(b);
        inspectLargeLine(buf);
        readStrict(buf);
      }),
    );
  });

  it('readStrict: a line it reads one way reads that way to first-key-wins and last-key-wins parsers alike', () => {
    let read = 0;
    check(
      fc.property(rpcLine, (text) => {
        const strict = readStrict(Buffer.from(text));
        if (!strict.info || strict.info.kind === 'invalid') return;
        read++;
        const first = reading(parseJson(text, true));
        const last = reading(parseJson(text, false));
        expect(first).toEqual(last);
        expect(strict.info.kind).toBe(last.kind);
        expect(strict.info.method).toBe(last.method);
        if (last.kind === 'response' || last.kind === 'request') {
          const id: unknown = JSON.parse(strict.info.idText as string);
          expect([typeof id, String(id)]).toEqual([typeof last.id, String(last.id)]);
        }
        // The bridge's exact id is the raw text of the one top-level id.
        if (last.kind === 'response') expect(strict.idTexts).toHaveLength(1);
      }),
    );
    expect(read).toBeGreaterThan(RUNS / 10);
  });

  it('readStrict: a line with a duplicate key, a __proto__ key or invalid UTF-8 is never read one way', () => {
    check(
      fc.property(rpcLine, fc.constantFrom('dup', 'proto', 'utf8'), (text, flaw) => {
        const inner = text.trim();
        if (!inner.startsWith('{') || inner === '{}') return;
        const body = inner.slice(1);
        const flawed =
          flaw === 'dup'
            ? Buffer.from(`{"k":1,"k":2,${body}`)
            : flaw === 'proto'
              ? Buffer.from(`{"\\u005f_proto__":{},${body}`)
              : Buffer.concat([Buffer.from('{"k":"'), Buffer.from([0xff]), Buffer.from(`",${body}`)]);
        const strict = readStrict(flawed);
        if (strict.info?.kind === 'invalid') return;
        expect(strict.info).toBeUndefined();
        expect(strict.ambiguity).toBeDefined();
      }),
    );
  });

  it('idsLooselyEqual: equal ids are loosely equal, and the SDK reading (Number) always matches', () => {
    check(
      fc.property(idText, idText, (a, b) => {
        const x = JSON.parse(a);
        const y = JSON.parse(b);
        const sdk = !Number.isNaN(Number(x)) && Number(x) === Number(y);
        if (sdk || String(x) === String(y)) expect(idsLooselyEqual(a, b)).toBe(true);
        expect(idsLooselyEqual(a, b)).toBe(idsLooselyEqual(b, a));
      }),
    );
  });

  it('LineFramer: any bytes in any chunking come out as the same lines, long ones as oversize', () => {
    const lineBytes = fc.uint8Array({ maxLength: 120 }).map((b) => Buffer.from(b.filter((x) => x !== 10)));
    check(
      fc.property(
        fc.array(lineBytes, { maxLength: 12 }),
        fc.boolean(),
        fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 20 }),
        fc.integer({ min: 1, max: 150 }),
        (lines, lastCut, sizes, max) => {
          const parts = lines.map((l, i) =>
            lastCut && i === lines.length - 1 ? l : Buffer.concat([l, Buffer.from('\n')]),
          );
          const data = Buffer.concat(parts);
          const framer = new LineFramer({ maxLineBytes: max });
          const got: Array<{ line: Buffer } | { head: Buffer; size: number }> = [];
          const handler = {
            line: (line: Buffer) => got.push({ line: Buffer.from(line) }),
            oversize: (head: Buffer, size: number) => got.push({ head: Buffer.from(head), size }),
          };
          for (let at = 0, k = 0; at < data.length; k++) {
            const size = sizes[k % sizes.length] as number;
            framer.push(data.subarray(at, at + size), handler);
            at += size;
          }
          framer.end(handler);
          const expected = parts.filter((p) => p.length > 0);
          expect(got).toHaveLength(expected.length);
          expected.forEach((part, i) => {
            const item = got[i] as { line?: Buffer; head?: Buffer; size?: number };
            const content = part[part.length - 1] === 10 ? part.length - 1 : part.length;
            if (content <= max) expect(item.line?.equals(part)).toBe(true);
            else {
              expect(item.size).toBe(part.length);
              const head = item.head as Buffer;
              expect(part.subarray(0, head.length).equals(head)).toBe(true);
              expect(head.length).toBeGreaterThanOrEqual(Math.min(content, max + 1));
            }
          });
        },
      ),
    );
  });

  it('the trace reader gives back every record the trace wrote, whatever the messages hold', () => {
    const message = fc.oneof(
      fc.json({ maxDepth: 3 }).map((text) => ({ text, json: true })),
      fc.string({ unit: 'binary', maxLength: 40 }).map((text) => ({ text, json: false })),
      fc.constantFrom(
        { text: '{"id":9007199254740993,"result":{}}', json: true },
        { text: '{"a":"\\u001b[2J\\u009b\\ud800"}', json: true },
        { text: '\u001b]52;c;eA==\u0007', json: false },
      ),
    );
    check(
      fc.property(
        fc.array(message, { maxLength: 8 }),
        // Field names are the bridge's own (the record's head keys are not among them).
        fc.dictionary(
          fc.string({ maxLength: 5 }).map((k) => `f-${k}`),
          fc.jsonValue({ maxDepth: 2 }),
          {
            maxKeys: 3,
          },
        ),
        fc.nat({ max: 40 }),
        (messages, fields, cut) => {
          let text = '';
          const trace = new JsonlTrace(
            (t) => {
              text += t;
            },
            () => undefined,
          );
          trace.event('session-start', fields);
          for (const m of messages) trace.message('server->client', m.text, m.text.length, m.json);
          trace.close();
          const whole = readTrace(text);
          expect(whole.malformed).toBe(0);
          expect(whole.truncatedLast).toBe(false);
          expect(whole.records).toHaveLength(messages.length + 1);
          messages.forEach((m, i) => {
            const record = whole.records[i + 1] as Record<string, unknown>;
            if (m.json) expect(record.message).toEqual(JSON.parse(m.text));
            else expect(record.raw).toBe(m.text);
          });
          // A trace cut mid-line (a crash) still reads: the earlier records whole, the cut one noted.
          const lastStart = text.lastIndexOf('\n', text.length - 2) + 1;
          const lastLength = text.length - 1 - lastStart;
          if (lastLength > 1) {
            const partial = readTrace(text.slice(0, lastStart + 1 + (cut % (lastLength - 1))));
            expect(partial.records).toHaveLength(messages.length);
            expect(partial.truncatedLast).toBe(true);
          }
        },
      ),
    );
  });
});
