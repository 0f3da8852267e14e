import { BackendUnavailableError, SandboxFailureError, UsageError } from '@mcpsandbox/core';
import {
  AuthenticationError,
  NotFoundError,
  RateLimitError,
  SandboxNotFoundError,
  SandboxError as SdkSandboxError,
  TimeoutError,
} from 'e2b';
import { describe, expect, it } from 'vitest';
import { createBackend, createE2BBackend } from './backend.js';
import { ByteQueue } from './byte-queue.js';
import { E2B_ERROR_CODES, wrapE2BError } from './errors.js';
import { toExitStatus } from './exit-status.js';
import { toE2BEgress } from './network.js';
import { parseNpx } from './npx.js';

describe('createE2BBackend', () => {
  it('is synchronous, does no I/O, and declares e2b / microvm', () => {
    const backend = createE2BBackend({ hostEnv: {} });
    expect(backend).toMatchObject({
      specificationVersion: 'sandbox-backend-v1',
      id: 'e2b',
      isolation: 'microvm',
    });
    expect(createBackend).toBe(createE2BBackend);
    expect(backend.describe?.()).toBe(
      'E2B Firecracker micro-VM (template base; API key sent to api.e2b.app)',
    );
  });

  it('takes the template from settings and the domain from the host environment', () => {
    const backend = createE2BBackend({
      hostEnv: { E2B_DOMAIN: 'e2b.example.org' },
      settings: { template: 'mcp' },
    });
    expect(backend.describe?.()).toBe(
      'E2B Firecracker micro-VM (template mcp; API key sent to api.e2b.example.org)',
    );
  });

  it('reports a bad numeric setting when a sandbox is created, not at load', async () => {
    const backend = createE2BBackend({ hostEnv: { E2B_API_KEY: 'k' }, settings: { maxMountBytes: 'lots' } });
    await expect(backend.create({ sessionId: 's', env: {}, ttlMs: 1000 })).rejects.toThrow(/maxMountBytes/);
  });
});

describe('toExitStatus (envd end events)', () => {
  it('keeps non-zero codes and maps Go signal names', () => {
    expect(toExitStatus({ exitCode: 0, exited: true, status: 'exit status 0' })).toEqual({
      code: 0,
      signal: null,
    });
    expect(toExitStatus({ exitCode: 3, exited: true, status: 'exit status 3' })).toEqual({
      code: 3,
      signal: null,
    });
    expect(toExitStatus({ exitCode: -1, exited: false, status: 'signal: killed' })).toEqual({
      code: null,
      signal: 'SIGKILL',
    });
    expect(toExitStatus({ exitCode: -1, exited: false, status: 'signal: terminated' })).toEqual({
      code: null,
      signal: 'SIGTERM',
    });
    expect(
      toExitStatus({ exitCode: -1, exited: false, status: 'signal: segmentation fault (core dumped)' }),
    ).toEqual({ code: null, signal: 'SIGSEGV' });
  });
});

describe('toExitStatus (what envd may not pass off)', () => {
  it('turns codes outside 0-255 and unknown signal names into 125', () => {
    for (const exitCode of [256, -1, 65_536, 1.5, Number.NaN]) {
      expect(toExitStatus({ exitCode, exited: true, status: '' })).toEqual({ code: 125, signal: null });
    }
    for (const status of ['signal: constructor', 'signal: \u001b[31mred', 'signal: toString']) {
      expect(toExitStatus({ exitCode: -1, exited: false, status })).toEqual({ code: 125, signal: null });
    }
    expect(toExitStatus({ exitCode: 255, exited: true, status: 'exit status 255' })).toEqual({
      code: 255,
      signal: null,
    });
  });
});

describe('parseNpx', () => {
  it('recognises the -y forms and leaves the rest to npx', () => {
    expect(parseNpx(['npx', '-y', '@scope/pkg@1.2.3', 'serve', '--port', '1'])).toEqual({
      spec: '@scope/pkg@1.2.3',
      args: ['serve', '--port', '1'],
    });
    expect(parseNpx(['npx', '--yes', '--', 'pkg'])).toEqual({ spec: 'pkg', args: [] });
    expect(parseNpx(['npx', '-y', '-p', 'pkg', 'bin', 'x'])).toEqual({
      spec: 'pkg',
      bin: 'bin',
      args: ['x'],
    });
    expect(parseNpx(['npx', '--package=pkg', '-y', 'bin'])).toEqual({ spec: 'pkg', bin: 'bin', args: [] });
    expect(parseNpx(['npx', 'pkg'])).toBeUndefined();
    expect(parseNpx(['npx', '-y', '--registry', 'x', 'pkg'])).toBeUndefined();
    expect(parseNpx(['node', '-y', 'pkg'])).toBeUndefined();
  });
});

describe('toE2BEgress', () => {
  it('denies by default, opens only for *, and lists hosts otherwise', () => {
    expect(toE2BEgress(undefined)).toMatchObject({ allowInternetAccess: false });
    expect(toE2BEgress({ allow: [] })).toMatchObject({ allowInternetAccess: false });
    expect(toE2BEgress({ allow: ['a.com', '*'] })).toEqual({ summary: 'unrestricted (E2B default)' });
    expect(toE2BEgress({ allow: ['a.com', 'a.com', '192.168.0.0/16'] }).network).toEqual({
      allowOut: ['a.com', '192.168.0.0/16'],
      denyOut: ['0.0.0.0/0'],
    });
  });

  it('refuses what it cannot express instead of widening it', () => {
    for (const rule of ['a.com:443', '*.a.com:80', '[::1]', '::1', 'a b', 'http://a.com']) {
      expect(() => toE2BEgress({ allow: [rule] })).toThrow(BackendUnavailableError);
    }
  });
});

describe('toE2BEgress and host names (issue 20)', () => {
  it('tells E2B validated names only, and builds no suggestion from a name that is not one', () => {
    expect(toE2BEgress({ allow: ['*.Example.COM', 'API.example.com.'] }).network?.allowOut).toEqual([
      '*.example.com',
      'api.example.com',
    ]);
    for (const rule of ['203.0.113.7\0.a.com', 'x;{touch,m};x', 'a_b.com', 'bücher.de', '127.1']) {
      expect(() => toE2BEgress({ allow: [rule] }), JSON.stringify(rule)).toThrow(BackendUnavailableError);
    }
    expect(() => toE2BEgress({ allow: ['a.com:443'] })).toThrow("grant 'a.com' (all ports)");
    let message = '';
    try {
      toE2BEgress({ allow: ['x;id;x:443'] });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('cannot restrict ports');
    expect(message).not.toContain("grant 'x;id;x'");
  });
});

describe('wrapE2BError', () => {
  it('maps SDK errors to typed errors with codes, one line, and the SDK error as cause', () => {
    const cases: [Error, string, unknown][] = [
      [new AuthenticationError('Unauthorized'), E2B_ERROR_CODES.auth, BackendUnavailableError],
      [new RateLimitError('Rate limit exceeded'), E2B_ERROR_CODES.quota, SandboxFailureError],
      [new TimeoutError('took\ntoo long'), E2B_ERROR_CODES.timeout, SandboxFailureError],
      [new NotFoundError('404: template x not found'), E2B_ERROR_CODES.notFound, SandboxFailureError],
      [new SandboxNotFoundError('gone'), E2B_ERROR_CODES.notFound, SandboxFailureError],
      [new SdkSandboxError('500: boom'), E2B_ERROR_CODES.other, SandboxFailureError],
      [new TypeError('fetch failed'), E2B_ERROR_CODES.unreachable, BackendUnavailableError],
    ];
    for (const [error, code, type] of cases) {
      const wrapped = wrapE2BError(error, 'do a thing');
      expect(wrapped).toBeInstanceOf(type as new () => Error);
      expect(wrapped.code).toBe(code);
      expect(wrapped.cause).toBe(error);
      expect(wrapped.message).not.toContain('\n');
      expect(wrapped.message).toContain('do a thing');
    }
  });

  it('passes our own typed errors through', () => {
    const usage = new UsageError('x');
    expect(wrapE2BError(usage, 'y')).toBe(usage);
  });
});

describe('ByteQueue', () => {
  it('holds producers at the high-water mark until the consumer reads', async () => {
    const queue = new ByteQueue(4);
    let released = false;
    const blocked = queue.push(new Uint8Array(8)).then(() => {
      released = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(released).toBe(false);
    const iterator = queue[Symbol.asyncIterator]();
    expect((await iterator.next()).value).toHaveLength(8);
    await blocked;
    expect(released).toBe(true);
    queue.end();
    expect((await iterator.next()).done).toBe(true);
  });

  it('delivers what was buffered before end()', async () => {
    const queue = new ByteQueue(1024);
    void queue.push(Buffer.from('a'));
    void queue.push(Buffer.from('b'));
    queue.end();
    const seen: string[] = [];
    for await (const chunk of queue) seen.push(Buffer.from(chunk).toString());
    // Chunks that waited together may come out merged: the bytes and their order are what count.
    expect(seen.join('')).toBe('ab');
  });
});
