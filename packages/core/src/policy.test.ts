import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  digestTool,
  filePinStore,
  globToRegExp,
  type PinStore,
  type ToolDescription,
  ToolPolicy,
} from './policy.js';

function memoryPins(
  initial?: Record<string, string>,
): PinStore & { saved: Record<string, string> | undefined; creates: number } {
  const store = {
    saved: initial,
    creates: 0,
    location: 'memory',
    load: () => store.saved,
    create: (pins: Record<string, string>) => {
      if (store.saved) return false;
      store.creates++;
      store.saved = { ...pins };
      return true;
    },
  };
  return store;
}

/** A listing in one page. */
const whole = (tools: readonly ToolDescription[]) => ({ tools, first: true, last: true });

describe('ToolPolicy', () => {
  it('matches globs on the whole name', () => {
    expect(globToRegExp('get-*').test('get-env')).toBe(true);
    expect(globToRegExp('get-*').test('forget-env')).toBe(false);
    expect(globToRegExp('a?c').test('abc')).toBe(true);
    expect(globToRegExp('a.c').test('abc')).toBe(false);
  });

  it('lets deny win over allow, and allow restrict to its matches', () => {
    const policy = new ToolPolicy({ allow: ['read_*', 'list'], deny: ['read_secret*'] });
    expect(policy.verdict('read_file').allowed).toBe(true);
    expect(policy.verdict('list').allowed).toBe(true);
    expect(policy.verdict('read_secrets')).toMatchObject({ allowed: false, reason: 'deny' });
    expect(policy.verdict('write_file')).toMatchObject({ allowed: false, reason: 'allow' });
    expect(new ToolPolicy({}).active).toBe(false);
  });

  it('records pins on first run, then reports added and changed tools', () => {
    const pins = memoryPins();
    const tools = [
      { name: 'a', description: 'one', inputSchema: { type: 'object', properties: { x: {} } } },
      { name: 'b', description: 'two' },
    ];
    expect(new ToolPolicy({ pins }).session().review(whole(tools)).changes).toEqual([]);
    expect(Object.keys(pins.saved ?? {})).toEqual(['a', 'b']);

    const later = new ToolPolicy({ pins, strict: true }).session();
    const { changes } = later.review(
      whole([
        { ...tools[0], description: 'one, and more' } as (typeof tools)[0],
        tools[1] as (typeof tools)[1],
        { name: 'c' },
      ]),
    );
    expect(changes).toEqual([
      { tool: 'a', change: 'changed' },
      { tool: 'c', change: 'added' },
    ]);
    expect(later.verdict('a')).toMatchObject({ allowed: false, reason: 'pin' });
    expect(later.verdict('b').allowed).toBe(true);
  });

  it('strict pins are an allowlist: a tool never pinned is refused, listed or not', () => {
    const tools = [{ name: 'a', description: 'one' }, { name: 'b' }];
    const pins = memoryPins();
    // First run, strict: nothing is pinned until the surface is listed, so nothing may be called.
    const first = new ToolPolicy({ pins, strict: true }).session();
    expect(first.verdict('a')).toMatchObject({ allowed: false, rule: 'pin-tools-strict', reason: 'pin' });
    expect(first.review(whole(tools)).changes).toEqual([]);
    expect(first.verdict('a').allowed).toBe(true);

    // A later session: a 2026-07-28 client may call from a cached list without listing again.
    const later = new ToolPolicy({ pins, strict: true }).session();
    expect(later.verdict('a').allowed).toBe(true);
    expect(later.verdict('b').allowed).toBe(true);
    expect(later.verdict('never-listed')).toMatchObject({ allowed: false, reason: 'pin' });
    // Names an object has by inheritance are not pins.
    for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty'])
      expect(later.verdict(name), name).toMatchObject({ allowed: false, reason: 'pin' });

    // Control: without strict, pins only warn, and an unpinned tool may be called.
    expect(new ToolPolicy({ pins }).session().verdict('never-listed').allowed).toBe(true);
  });

  it('first-run pinning ends with the first complete listing: a later listing is drift, never pinned', () => {
    const pins = memoryPins();
    const session = new ToolPolicy({ pins, strict: true }).session();
    // Two pages: nothing is written until the listing is complete.
    expect(session.review({ tools: [{ name: 'a', description: 'one' }], first: true, last: false })).toEqual({
      ambiguous: [],
      changes: [],
    });
    expect(pins.saved).toBeUndefined();
    session.review({ tools: [{ name: 'b' }], first: false, last: true });
    const written = pins.saved;
    expect(Object.keys(written ?? {})).toEqual(['a', 'b']);
    // The server changes a after its first listing: drift, refused, and the pins stay as written.
    const { changes } = session.review(whole([{ name: 'a', description: 'changed' }, { name: 'b' }]));
    expect(changes).toEqual([{ tool: 'a', change: 'changed' }]);
    expect(session.verdict('a')).toMatchObject({ allowed: false, reason: 'pin' });
    expect(pins.saved).toBe(written);
    expect(pins.creates).toBe(1);
  });

  it('two sessions pinning at once: the second finds the pins of the first and compares with them', () => {
    const pins = memoryPins();
    const policy = new ToolPolicy({ pins, strict: true });
    const a = policy.session();
    const b = policy.session();
    a.review(whole([{ name: 'echo', description: 'honest' }]));
    const { changes } = b.review(whole([{ name: 'echo', description: 'poisoned' }]));
    expect(changes).toEqual([{ tool: 'echo', change: 'changed' }]);
    expect(b.verdict('echo')).toMatchObject({ allowed: false, reason: 'pin' });
    expect(a.verdict('echo').allowed).toBe(true);
    // What a session learns is its own: a third session trusts the file, not b.
    expect(policy.session().verdict('echo').allowed).toBe(true);
    expect(pins.saved?.echo).toBe(digestTool({ name: 'echo', description: 'honest' }));
  });

  it('a name listed twice, on one page or across pages, is ambiguous: refused, never pinned', () => {
    const pins = memoryPins();
    const session = new ToolPolicy({ pins }).session();
    const page1 = session.review({ tools: [{ name: 'echo' }, { name: 'add' }], first: true, last: false });
    expect(page1.ambiguous).toEqual([]);
    const page2 = session.review({
      tools: [{ name: 'echo', description: 'x' }, { name: 'ｅｃｈｏ' }],
      first: false,
      last: true,
    });
    expect(new Set(page2.ambiguous)).toEqual(new Set(['echo', 'ｅｃｈｏ']));
    expect(session.verdict('echo')).toMatchObject({ allowed: false, reason: 'ambiguous' });
    expect(Object.keys(pins.saved ?? {})).toEqual(['add']);
    // Control: a new listing is reviewed on its own, but the name stays refused in this session.
    expect(session.review(whole([{ name: 'echo' }])).ambiguous).toEqual([]);
    expect(session.verdict('echo').allowed).toBe(false);
  });

  it('a deny rule matches the look-alikes of the names it matches', () => {
    const policy = new ToolPolicy({ deny: ['get-*'] });
    for (const name of ['get-env', 'ｇｅｔ-env', 'gеt-env', 'GET-ENV', 'g\u200Bet-env'])
      expect(policy.verdict(name), name).toMatchObject({ allowed: false, reason: 'deny' });
    expect(policy.verdict('set-env').allowed).toBe(true);
  });

  it('digests independently of key order', () => {
    expect(digestTool({ name: 'a', inputSchema: { x: 1, y: 2 } })).toBe(
      digestTool({ name: 'a', inputSchema: { y: 2, x: 1 } }),
    );
    expect(digestTool({ name: 'a', description: 'x' })).not.toBe(digestTool({ name: 'a', description: 'y' }));
  });
});

describe('filePinStore', () => {
  it('writes the pins once: a second create neither replaces them nor follows a link at the name', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcp-sandbox-pins-'));
    try {
      const path = join(dir, 'pins.json');
      const store = filePinStore(path);
      expect(store.load()).toBeUndefined();
      expect(store.create({ a: 'a'.repeat(64) })).toBe(true);
      expect(store.create({ a: 'b'.repeat(64) })).toBe(false);
      expect(store.load()).toEqual({ a: 'a'.repeat(64) });
      // A link planted at the name is never written through.
      const target = join(dir, 'target');
      writeFileSync(target, 'unchanged');
      const linked = join(dir, 'linked.json');
      symlinkSync(target, linked);
      expect(filePinStore(linked).create({ a: 'a'.repeat(64) })).toBe(false);
      expect(readFileSync(target, 'utf8')).toBe('unchanged');
      // A pin that is not a digest makes the file unreadable, with what to do.
      writeFileSync(path, JSON.stringify({ v: 1, tools: { a: 'x' } }));
      expect(() => store.load()).toThrow(/not a sha256 digest.*delete it to re-pin/);
      // A FIFO at the path is refused at once, never waited on.
      const fifo = join(dir, 'fifo.json');
      execFileSync('mkfifo', [fifo]);
      expect(() => filePinStore(fifo).load()).toThrow(/not a regular file/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
