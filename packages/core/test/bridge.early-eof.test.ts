import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { type SandboxBackend, type SandboxProcess, SPECIFICATION_VERSION } from '../src/index.js';
import { bridgeWith } from './bridge-harness.js';

// A client that closes stdin before the sandbox is up (`< /dev/null`, a script that sends nothing)
// must meet the server as a direct start would: the server starts, reads EOF, and its last words
// and exit code reach the user. The session used to kill it at once, losing both (exit 0).
function slowBackend(kills: string[]): SandboxBackend {
  const stderr = new PassThrough();
  const stdout = new PassThrough();
  let exited: (status: { code: number | null; signal: null }) => void = () => {};
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => {
    exited = done;
  });
  const proc: SandboxProcess = {
    stdout,
    stderr,
    exit,
    write: async () => {},
    // The server sees EOF, says why it stops, and exits 3.
    closeStdin: async () => {
      setTimeout(() => {
        stderr.end('server: stdin closed before any request\n');
        stdout.end();
        exited({ code: 3, signal: null });
      }, 30);
    },
    kill: async (signal) => {
      kills.push(signal ?? 'SIGTERM');
      stdout.end();
      stderr.end();
      exited({ code: null, signal: null });
    },
  };
  return {
    specificationVersion: SPECIFICATION_VERSION,
    id: 'slow',
    isolation: 'none',
    create: async () => {
      await new Promise((done) => setTimeout(done, 150));
      return { id: 'slow-1', exec: async () => proc, close: async () => {} };
    },
  };
}

describe('a client that closes stdin before the server has started', () => {
  it('still gets the server started, its stderr shown and its exit code', async () => {
    const kills: string[] = [];
    const input = new PassThrough();
    input.end();
    const { session, shown } = bridgeWith(slowBackend(kills), ['server'], input);
    const result = await session.done;
    expect(kills).toEqual([]);
    expect(result.exitCode).toBe(3);
    expect(shown()).toContain('stdin closed before any request');
  });
});
