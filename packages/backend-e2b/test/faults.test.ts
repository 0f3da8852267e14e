import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import {
  BackendUnavailableError,
  ExitCode,
  type ExitStatus,
  ProcessClosedError,
  type Sandbox,
  type SandboxEvent,
  SandboxFailureError,
  UsageError,
} from '@mcpsandbox/core';
import { nodeProbe } from '@mcpsandbox/core/conformance';
import { AuthenticationError, RateLimitError } from 'e2b';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createE2BBackend, E2B_ERROR_CODES } from '../src/index.js';
import type { E2BProcess } from '../src/process.js';
import { FAKE_API_KEY, type FakeE2B, startFakeE2B } from '../src/testing/index.js';
import { bridgeSession, collect, fakeBackend } from './helpers.js';

let fake: FakeE2B;
const open: Sandbox[] = [];
beforeAll(async () => {
  fake = await startFakeE2B();
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((box) => box.close()));
});
afterAll(async () => {
  await fake.close();
});

const spec = (extra: object = {}) => ({ sessionId: 'faults', env: {}, ttlMs: 60_000, ...extra });

async function sandbox(extra: object = {}): Promise<Sandbox> {
  const box = await fakeBackend(fake).create(spec(extra));
  open.push(box);
  return box;
}

/** Waits for the probe's first line, then keeps draining so it never blocks. */
async function ready(proc: E2BProcess): Promise<void> {
  const iterator = proc.stdout[Symbol.asyncIterator]();
  let seen = '';
  while (!seen.includes('\n')) {
    const next = await iterator.next();
    if (next.done) throw new Error('probe ended early');
    seen += Buffer.from(next.value).toString();
  }
  void (async () => {
    while (!(await iterator.next()).done) {}
  })();
}

const creates = () => fake.requests.filter((r) => r === 'POST /v2/sandboxes').length;

describe('refusals before or at creation', () => {
  it('a missing API key is a usage error and nothing is created', async () => {
    const before = creates();
    const backend = createE2BBackend({ hostEnv: {}, apiUrl: fake.apiUrl, sandboxUrl: fake.sandboxUrl });
    const error = await backend.create(spec()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).message).toMatch(/E2B_API_KEY/);
    expect(creates()).toBe(before);
  });

  it('a refused API key (401) is E_E2B_AUTH with the SDK error as cause', async () => {
    const backend = fakeBackend(fake, { hostEnv: { E2B_API_KEY: 'e2b_wrong' } });
    const error = await backend.create(spec()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BackendUnavailableError);
    expect(error).toMatchObject({ code: E2B_ERROR_CODES.auth });
    expect((error as Error).cause).toBeInstanceOf(AuthenticationError);
    expect((error as Error).message).not.toContain('\n');
  });

  it('a refused create (500) is a sandbox failure naming the step', async () => {
    fake.failCreate(500, 'no capacity in this cluster');
    const error = await fakeBackend(fake)
      .create(spec())
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SandboxFailureError);
    expect(error).toMatchObject({ code: E2B_ERROR_CODES.other });
    expect((error as Error).message).toMatch(/create a sandbox.*no capacity/);
  });

  it('a rate limit (429) is E_E2B_QUOTA', async () => {
    fake.failCreate(429, 'concurrent sandbox limit reached');
    const error = await fakeBackend(fake)
      .create(spec())
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: E2B_ERROR_CODES.quota });
    expect((error as Error).cause).toBeInstanceOf(RateLimitError);
  });

  it('an unknown template is E_E2B_NOT_FOUND', async () => {
    const error = await fakeBackend(fake, { settings: { template: 'no-such-template' } })
      .create(spec())
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: E2B_ERROR_CODES.notFound });
    expect((error as Error).message).toContain('no-such-template');
  });

  it('an unreachable API is E_E2B_UNREACHABLE, without hanging', async () => {
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number };
        server.close(() => resolve(port));
      });
    });
    const backend = fakeBackend(fake, { apiUrl: `http://127.0.0.1:${port}` });
    const error = await backend.create(spec()).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: E2B_ERROR_CODES.unreachable });
  });

  it('through the bridge, a refused create answers pending requests and exits 125', async () => {
    fake.failCreate(429, 'quota');
    const run = bridgeSession(fakeBackend(fake), nodeProbe(['echo']));
    const replies = collect(run.clientOut);
    run.clientIn.write('{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n');
    const result = await run.session.done;
    run.clientIn.end();
    expect(result.exitCode).toBe(ExitCode.sandboxFailure);
    expect(result.error?.code).toBe(E2B_ERROR_CODES.quota);
    run.clientOut.end();
    expect((await replies).toString()).toMatch(/"id":1,"error"/);
  });
});

describe('faults while the server runs', () => {
  it('a dropped stream ends the process as lost (SIGKILL, E_E2B_STREAM_LOST) and kills it in the VM', async () => {
    const events: SandboxEvent[] = [];
    const box = await sandbox({ onEvent: (event: SandboxEvent) => events.push(event) });
    const proc = (await box.exec(nodeProbe(['sleep']))) as E2BProcess;
    await ready(proc);
    const vm = fake.sandboxes.get(box.id)!;
    expect(vm.processes.has(proc.pid)).toBe(true);
    fake.dropStreams(box.id);
    const status: ExitStatus = await proc.exit;
    expect(status).toMatchObject({ code: null, signal: 'SIGKILL' });
    expect(status.error?.code).toBe(E2B_ERROR_CODES.streamLost);
    expect(events.find((e) => e.type === 'e2b-process-lost')).toMatchObject({
      code: E2B_ERROR_CODES.streamLost,
    });
    await expect.poll(() => vm.processes.has(proc.pid)).toBe(false);
    await expect(proc.write(Buffer.from('x'))).rejects.toBeInstanceOf(ProcessClosedError);
  });

  it('through the bridge, a dropped stream answers the pending request and ends without a hang', async () => {
    const run = bridgeSession(fakeBackend(fake), nodeProbe(['sleep']));
    const replies = collect(run.clientOut);
    run.clientIn.write('{"jsonrpc":"2.0","id":"pending","method":"tools/call"}\n');
    await expect.poll(() => run.trace().some((r) => r.type === 'process-start')).toBe(true);
    const id = (run.trace().find((r) => r.type === 'sandbox-created') as { sandboxId: string }).sandboxId;
    await expect.poll(() => fake.sandboxes.get(id)?.processes.size).toBe(1);
    fake.dropStreams(id);
    const result = await run.session.done;
    expect(result.reason).toBe('server-exit');
    // A lost sandbox is a sandbox failure, not the server's own exit.
    expect(result.exitCode).toBe(125);
    run.clientIn.end();
    run.clientOut.end();
    expect((await replies).toString()).toMatch(/"id":"pending","error"/);
    expect(fake.sandboxes.get(id)?.alive).toBe(false);
  });

  it('a process killed inside the VM reports SIGKILL, and the bridge exits 137', async () => {
    const box = await sandbox();
    const proc = (await box.exec(nodeProbe(['hang']))) as E2BProcess;
    await ready(proc);
    const killer = await box.exec(['kill', '-KILL', String(proc.pid)]);
    expect(await killer.exit).toEqual({ code: 0, signal: null });
    expect(await proc.exit).toEqual({ code: null, signal: 'SIGKILL' });
  });

  it("a crashed server's non-zero exit code is the bridge's exit code, not 0", async () => {
    const run = bridgeSession(fakeBackend(fake), nodeProbe(['exit', '3']));
    const result = await run.session.done;
    run.clientIn.end();
    expect(result).toMatchObject({
      reason: 'server-exit',
      exitCode: 3,
      serverStatus: { code: 3, signal: null },
    });
  });

  it('a sandbox that expires at E2B (TTL) ends its process as E_E2B_TIMEOUT, and later calls fail typed', async () => {
    const box = await sandbox();
    const proc = (await box.exec(nodeProbe(['hang']))) as E2BProcess;
    await ready(proc);
    fake.expire(box.id);
    const status: ExitStatus = await proc.exit;
    expect(status).toMatchObject({ code: null, signal: 'SIGKILL' });
    expect(status.error?.code).toBe(E2B_ERROR_CODES.timeout);
    const error = await box.exec(nodeProbe(['exit', '0'])).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SandboxFailureError);
    expect(error).toMatchObject({ code: E2B_ERROR_CODES.timeout });
    await box.close();
  });

  it('the TTL is the VM timeout at E2B: the VM is reaped even when the host is SIGKILLed', async () => {
    // A separate Node process creates the sandbox and is then killed without any chance to clean up.
    const script = `
      import { createE2BBackend } from ${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)};
      const backend = createE2BBackend({ apiUrl: process.env.FAKE_API, sandboxUrl: process.env.FAKE_ENVD });
      const box = await backend.create({ sessionId: 'doomed', env: {}, ttlMs: 1500 });
      process.stdout.write(box.id + '\\n');
      setInterval(() => {}, 1000);
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      env: {
        PATH: process.env.PATH ?? '',
        E2B_API_KEY: FAKE_API_KEY,
        FAKE_API: fake.apiUrl,
        FAKE_ENVD: fake.sandboxUrl,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const [line] = (await once(child.stdout, 'data')) as [Buffer];
    const id = line.toString().trim();
    child.kill('SIGKILL');
    await once(child, 'exit');
    const vm = fake.sandboxes.get(id)!;
    expect(vm.create.timeout).toBe(2);
    expect(vm.alive).toBe(true);
    await expect.poll(() => vm.alive, { timeout: 5_000 }).toBe(false);
    expect(fake.requests).not.toContain(`DELETE /sandboxes/${id}`);
  });

  it('close() while a server runs ends it as SIGKILL without reporting a fault', async () => {
    const events: SandboxEvent[] = [];
    const warnings: string[] = [];
    const logger = {
      debug() {},
      info() {},
      warn: (m: string) => warnings.push(m),
      error: (m: string) => warnings.push(m),
    };
    const box = await fakeBackend(fake, { logger }).create(
      spec({ onEvent: (e: SandboxEvent) => events.push(e) }),
    );
    const proc = (await box.exec(nodeProbe(['hang']))) as E2BProcess;
    await ready(proc);
    await box.close();
    expect(await proc.exit).toEqual({ code: null, signal: 'SIGKILL' });
    expect(fake.sandboxes.get(box.id)?.alive).toBe(false);
    expect(events.filter((e) => e.type === 'e2b-process-lost')).toEqual([]);
    expect(warnings).toEqual([]);
  });

  it('an aborted create is AbortedError and leaves no VM running', async () => {
    const controller = new AbortController();
    const pending = fakeBackend(fake).create(spec(), { signal: controller.signal });
    controller.abort();
    await expect(pending).rejects.toMatchObject({ code: 'E_ABORTED' });
    for (const vm of fake.sandboxes.values()) {
      if (vm.create.metadata?.sessionId === 'faults' && vm.alive) {
        expect(open.some((box) => box.id === vm.id)).toBe(true);
      }
    }
  });

  it('a server command that does not exist exits 127', async () => {
    const box = await sandbox();
    const proc = await box.exec(['no-such-mcp-server-binary']);
    const stderr = collect(proc.stderr);
    expect(await proc.exit).toEqual({ code: 127, signal: null });
    expect((await stderr).toString()).toMatch(/not found/);
  });
});

describe('what envd reports is checked, not trusted', () => {
  // Fails before exit codes were clamped: 256 from envd made the bridge (and the CLI) exit 0.
  it('an exit code outside 0-255 becomes 125, through the bridge', async () => {
    fake.attack({ match: 'exit-256', end: { exitCode: 256, exited: true, status: 'exit status 256' } });
    const run = bridgeSession(fakeBackend(fake), ['sh', '-c', 'exit 0 # exit-256']);
    const result = await run.session.done;
    run.clientIn.end();
    expect(result.serverStatus).toEqual({ code: 125, signal: null });
    expect(result.exitCode).toBe(125);
  });

  // Fails before signal names were checked: envd's text became the status's signal name.
  it('an unknown signal name becomes 125, and its text goes nowhere', async () => {
    fake.attack({
      match: 'odd-signal',
      end: { exitCode: -1, exited: false, status: 'signal: \u001b[31mpwned' },
    });
    const box = await sandbox();
    const proc = await box.exec(['sh', '-c', 'exit 0 # odd-signal']);
    expect(await proc.exit).toEqual({ code: 125, signal: null });
  });

  // Fails before text from the VM was cleaned: envd's error message reached the log with its
  // escape sequences and a granted secret.
  it('an error message from envd is logged without control characters and with secrets redacted', async () => {
    const secret = 'granted-secret-value-98765';
    fake.attack({
      match: 'bad-envd',
      streamError: { code: 'internal', message: `\u001b]0;owned\u0007\u001b[2J leaking ${secret}` },
    });
    const warnings: string[] = [];
    const logger = {
      debug() {},
      info() {},
      warn: (m: string) => warnings.push(m),
      error: (m: string) => warnings.push(m),
    };
    const box = await fakeBackend(fake, { logger }).create(spec({ env: { TOKEN: secret } }));
    open.push(box);
    const proc = await box.exec(['sh', '-c', 'sleep 5 # bad-envd']);
    const status = await proc.exit;
    expect(status.error?.code).toBe(E2B_ERROR_CODES.streamLost);
    // Control: envd's message did reach the log.
    expect(warnings.join('\n')).toContain('leaking');
    expect(warnings.join('\n')).not.toContain('\u001b');
    expect(warnings.join('\n')).not.toContain('\u0007');
    expect(warnings.join('\n')).not.toContain(secret);
    expect(status.error?.message).not.toContain(secret);
  });
});
