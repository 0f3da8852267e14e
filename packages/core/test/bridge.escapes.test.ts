import { Readable, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { type Sandbox, silentLogger, startBridge } from '../src/index.js';
import { mirrorBackend } from './memory-backend.js';

// Install output (a backend's prepare step runs code the server chose: npm install scripts) goes to
// the user's stderr: its control sequences must arrive escaped (fails before prepare's escaper).
describe('the bridge shows install output with controls escaped', () => {
  it('escapes OSC 52 and C1 CSI written during prepare, split across chunks', async () => {
    const base = mirrorBackend();
    const hostile = Buffer.from('installing \x1b]52;c;cm0gLXJmIH4=\x07 \u009b2J done\n');
    const backend = {
      ...base,
      async create(...args: Parameters<typeof base.create>): Promise<Sandbox> {
        const sandbox = await base.create(...args);
        return {
          ...sandbox,
          exec: sandbox.exec.bind(sandbox),
          close: sandbox.close.bind(sandbox),
          async prepare(command, options) {
            // The C1 character's two UTF-8 bytes land in different chunks.
            const cut = hostile.indexOf(0xc2) + 1;
            options.stderr(hostile.subarray(0, cut));
            options.stderr(hostile.subarray(cut));
            return command;
          },
        };
      },
    };
    const shown: Buffer[] = [];
    const errorOutput = new Writable({
      write(chunk: Buffer, _enc, done) {
        shown.push(Buffer.from(chunk));
        done();
      },
    });
    const output = new Writable({ write: (_c, _e, done) => done() });
    const session = startBridge({
      backend,
      command: ['server'],
      spec: { sessionId: 's', env: {}, ttlMs: 10_000 },
      input: Readable.from([]),
      output,
      errorOutput,
      logger: silentLogger,
    });
    await session.done;
    const text = Buffer.concat(shown).toString();
    expect(text).toContain('installing \\x1b]52;c;cm0gLXJmIH4=\\x07 \\u009b2J done');
    for (const control of ['\x1b', '\x07', '\u009b']) expect(text.includes(control)).toBe(false);
  });
});
