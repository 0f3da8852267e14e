import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { type SandboxBackend, type SandboxProcess, SPECIFICATION_VERSION } from '../src/index.js';
import { bridgeWith } from './bridge-harness.js';

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
    const input = new PassThrough();
    const { session, shown } = bridgeWith(backend, ['no-such-server'], input);
    const result = await session.done;
    input.end();
    expect(result.exitCode).toBe(127);
    expect(shown()).toContain('command not found: no-such-server');
  });
});
