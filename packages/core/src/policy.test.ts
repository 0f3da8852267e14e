import { describe, expect, it } from 'vitest';
import { digestTool, globToRegExp, type PinStore, ToolPolicy } from './policy.js';

function memoryPins(
  initial?: Record<string, string>,
): PinStore & { saved: Record<string, string> | undefined } {
  const store = {
    saved: initial,
    location: 'memory',
    load: () => store.saved,
    save: (pins: Record<string, string>) => {
      store.saved = { ...pins };
    },
  };
  return store;
}

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
    expect(new ToolPolicy({ pins }).review(tools)).toEqual([]);
    expect(Object.keys(pins.saved ?? {})).toEqual(['a', 'b']);

    const later = new ToolPolicy({ pins, strict: true });
    const changes = later.review([
      { ...tools[0], description: 'one, and more' } as (typeof tools)[0],
      tools[1] as (typeof tools)[1],
      { name: 'c' },
    ]);
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
    const first = new ToolPolicy({ pins, strict: true });
    expect(first.verdict('a')).toMatchObject({ allowed: false, rule: 'pin-tools-strict', reason: 'pin' });
    expect(first.review(tools)).toEqual([]);
    expect(first.verdict('a').allowed).toBe(true);

    // A later session: a 2026-07-28 client may call from a cached list without listing again.
    const later = new ToolPolicy({ pins, strict: true });
    expect(later.verdict('a').allowed).toBe(true);
    expect(later.verdict('b').allowed).toBe(true);
    expect(later.verdict('never-listed')).toMatchObject({ allowed: false, reason: 'pin' });
    // Names an object has by inheritance are not pins.
    for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty'])
      expect(later.verdict(name), name).toMatchObject({ allowed: false, reason: 'pin' });

    // Control: without strict, pins only warn, and an unpinned tool may be called.
    expect(new ToolPolicy({ pins }).verdict('never-listed').allowed).toBe(true);
  });

  it('digests independently of key order', () => {
    expect(digestTool({ name: 'a', inputSchema: { x: 1, y: 2 } })).toBe(
      digestTool({ name: 'a', inputSchema: { y: 2, x: 1 } }),
    );
    expect(digestTool({ name: 'a', description: 'x' })).not.toBe(digestTool({ name: 'a', description: 'y' }));
  });
});
