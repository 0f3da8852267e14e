import { PassThrough, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import {
  type SandboxBackend,
  type SandboxProcess,
  SPECIFICATION_VERSION,
  silentLogger,
  startBridge,
} from '../src/index.js';

// A server that has already exited when the session takes it over (an early start: its sandbox
// and process were made before the program loaded) wrote its last stderr lines before anything
// read its pipe. They must reach the user before the session ends (they were lost at random).
describe('the last stderr lines of a server that exited before the session read them', () => {
  it('are shown before the session ends', async () => {
    const stderr = new PassThrough();
    const stdout = new PassThrough();
    stdout.end();
    const proc: SandboxProcess = {
      stdout,
      stderr,
      exit: Promise.resolve({ code: 127, signal: null }),
      write: async () => {},
      closeStdin: async () => {},
      kill: async () => {},
    };
    // The pipe's data comes in after the exit has been seen, as a slow read would make it.
    setTimeout(() => stderr.end('command not found: no-such-server\n'), 50);
    const backend: SandboxBackend = {
      specificationVersion: SPECIFICATION_VERSION,
      id: 'exited',
      isolation: 'none',
      create: async () => ({ id: 'exited-1', exec: async () => proc, close: async () => {} }),
    };
    const shown: string[] = [];
    const errorOutput = new Writable({
      write(chunk: Buffer, _enc, done) {
        shown.push(chunk.toString());
        done();
      },
    });
    const input = new PassThrough();
    const session = startBridge({
      backend,
      command: ['no-such-server'],
      spec: { sessionId: 's', env: {}, ttlMs: 10_000 },
      input,
      output: new Writable({ write: (_c, _e, done) => done() }),
      errorOutput,
      logger: silentLogger,
    });
    const result = await session.done;
    input.end();
    expect(result.exitCode).toBe(127);
    expect(shown.join('')).toContain('command not found: no-such-server');
  });
});
