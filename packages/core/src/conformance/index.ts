import { afterEach, describe, expect, it } from 'vitest';
import {
  ISOLATION_LEVELS,
  type Sandbox,
  type SandboxBackend,
  type SandboxProcess,
  type SandboxSpec,
  SPECIFICATION_VERSION,
} from '../contract.js';
import { nodeProbe, PROBE_SOURCE, type ProbeCommand } from './probe.js';

export { nodeProbe, PROBE_SOURCE, type ProbeCommand };

export type ConformanceCase =
  | 'contract'
  | 'echo'
  | 'ordering'
  | 'large-payload'
  | 'stderr'
  | 'exit-codes'
  | 'kill-term'
  | 'kill-escalation'
  | 'close'
  | 'env-isolation'
  | 'ttl'
  | 'closed-stdin';

export interface ConformanceOptions {
  /** Shown in the suite title. */
  readonly name: string;
  readonly createBackend: () => SandboxBackend | Promise<SandboxBackend>;
  /** How to run the probe inside this backend; defaults to `node -e <probe>`. */
  readonly probe?: ProbeCommand;
  /** Extra spec fields (mounts a probe needs, say). */
  readonly spec?: Partial<Omit<SandboxSpec, 'env' | 'ttlMs' | 'sessionId'>>;
  /** Bytes sent and received in the large-payload case (default 20 MB). */
  readonly largePayloadBytes?: number;
  /** Per-case timeout in milliseconds (default 60 s). */
  readonly timeoutMs?: number;
}

const CANARY = 'MCPSANDBOX_CONFORMANCE_CANARY';

/**
 * Registers the backend conformance suite with vitest. Call it at the top level of a test file:
 *
 *   runConformanceSuite({ name: 'my-backend', createBackend: () => createBackend() });
 */
export function runConformanceSuite(options: ConformanceOptions): void {
  const probe = options.probe ?? nodeProbe;
  const timeout = options.timeoutMs ?? 60_000;
  const large = options.largePayloadBytes ?? 20_000_000;
  const open: Sandbox[] = [];

  const sandbox = async (overrides: Partial<SandboxSpec> = {}): Promise<Sandbox> => {
    const backend = await options.createBackend();
    const created = await backend.create({
      sessionId: `conformance-${Date.now()}`,
      env: {},
      ttlMs: 120_000,
      ...options.spec,
      ...overrides,
    });
    open.push(created);
    return created;
  };

  describe(`SandboxBackend conformance: ${options.name}`, () => {
    afterEach(async () => {
      await Promise.all(open.splice(0).map((s) => s.close()));
    });

    it('declares the contract version, an id and an isolation level', async () => {
      const backend = await options.createBackend();
      expect(backend.specificationVersion).toBe(SPECIFICATION_VERSION);
      expect(backend.id).toMatch(/^[a-z0-9][a-z0-9-]*$/);
      expect(ISOLATION_LEVELS).toContain(backend.isolation);
    });

    it('echoes stdin to stdout byte for byte, and ends on stdin EOF', { timeout }, async () => {
      const box = await sandbox();
      const proc = await box.exec(probe(['echo']));
      const all = new Uint8Array(256 * 4);
      for (let i = 0; i < all.length; i++) all[i] = i % 256;
      // A UTF-8 character split across two writes must arrive whole.
      const euro = Buffer.from('€\n');
      const output = collect(proc.stdout);
      await proc.write(all.subarray(0, 300));
      await proc.write(all.subarray(300));
      await proc.write(euro.subarray(0, 1));
      await proc.write(euro.subarray(1));
      await proc.closeStdin();
      expect(Buffer.compare(await output, Buffer.concat([all, euro]))).toBe(0);
      expect(await proc.exit).toEqual({ code: 0, signal: null });
    });

    it('keeps the order of writes that are not awaited one by one', { timeout }, async () => {
      const box = await sandbox();
      const proc = await box.exec(probe(['echo']));
      const output = collect(proc.stdout);
      const lines = Array.from({ length: 2000 }, (_, i) => `line ${i}\n`);
      await Promise.all(lines.map((line) => proc.write(Buffer.from(line))));
      await proc.closeStdin();
      expect((await output).toString()).toBe(lines.join(''));
      await proc.exit;
    });

    it(`streams ${large} bytes through stdin and back`, { timeout: timeout * 2 }, async () => {
      const box = await sandbox();
      const proc = await box.exec(probe(['echo']));
      const output = collect(proc.stdout);
      const block = Buffer.alloc(65536);
      for (let i = 0; i < block.length; i++) block[i] = (i * 7) % 251;
      let sent = 0;
      while (sent < large) {
        const size = Math.min(block.length, large - sent);
        await proc.write(block.subarray(0, size));
        sent += size;
      }
      await proc.closeStdin();
      const received = await output;
      expect(received.length).toBe(large);
      expect(Buffer.compare(received.subarray(0, block.length), block)).toBe(0);
      expect((await proc.exit).code).toBe(0);
    });

    it(`streams ${large} bytes of stdout`, { timeout: timeout * 2 }, async () => {
      const box = await sandbox();
      const proc = await box.exec(probe(['big', String(large)]));
      const received = await collect(proc.stdout);
      expect(received.length).toBe(large + 1);
      expect(received[received.length - 1]).toBe(10);
      expect((await proc.exit).code).toBe(0);
    });

    it('streams stderr apart from stdout', { timeout }, async () => {
      const box = await sandbox();
      const proc = await box.exec(probe(['stderr', 'to-stderr']));
      const [out, err] = await Promise.all([collect(proc.stdout), collect(proc.stderr)]);
      expect(out.toString()).toBe('out');
      expect(err.toString()).toBe('to-stderr');
      expect((await proc.exit).code).toBe(0);
    });

    it('reports exit codes, including non-zero ones', { timeout }, async () => {
      const box = await sandbox();
      for (const code of [0, 3, 42]) {
        const proc = await box.exec(probe(['exit', String(code)]));
        const out = collect(proc.stdout);
        expect(await proc.exit).toEqual({ code, signal: null });
        expect((await out).toString()).toBe('bye\n');
      }
    });

    it('kill() ends a running process with SIGTERM', { timeout }, async () => {
      const box = await sandbox();
      const proc = await box.exec(probe(['sleep']));
      await firstLine(proc);
      await proc.kill();
      expect(isSignalled(await proc.exit, 'SIGTERM', 143)).toBe(true);
    });

    it('kill("SIGKILL") ends a process that ignores SIGTERM', { timeout }, async () => {
      const box = await sandbox();
      const proc = await box.exec(probe(['hang']));
      await firstLine(proc);
      await proc.kill('SIGTERM');
      const early = await Promise.race([proc.exit, delay(500).then(() => 'running' as const)]);
      expect(early).toBe('running');
      await proc.kill('SIGKILL');
      expect(isSignalled(await proc.exit, 'SIGKILL', 137)).toBe(true);
    });

    it('close() is idempotent and ends what still runs', { timeout }, async () => {
      const box = await sandbox();
      const proc = await box.exec(probe(['hang']));
      await firstLine(proc);
      await Promise.all([box.close(), box.close()]);
      await box.close();
      const status = await proc.exit;
      expect(status.code === 0 && status.signal === null).toBe(false);
      await expect(box.exec(probe(['exit', '0']))).rejects.toThrow();
    });

    it('passes exactly the spec environment, never the host one', { timeout }, async () => {
      process.env[CANARY] = 'host-secret-value';
      try {
        const box = await sandbox({ env: { ALLOWED_ONE: '1', WITH_EQUALS: 'a=b' } });
        const proc = await box.exec(probe(['env']), { env: { PER_EXEC: 'yes' } });
        const env = JSON.parse((await collect(proc.stdout)).toString()) as Record<string, string>;
        expect(env.ALLOWED_ONE).toBe('1');
        expect(env.WITH_EQUALS).toBe('a=b');
        expect(env.PER_EXEC).toBe('yes');
        expect(env[CANARY]).toBeUndefined();
        expect(JSON.stringify(env)).not.toContain('host-secret-value');
        await proc.exit;
      } finally {
        delete process.env[CANARY];
      }
    });

    it('reaps processes when the TTL elapses', { timeout }, async () => {
      const box = await sandbox({ ttlMs: 1500 });
      const proc = await box.exec(probe(['hang']));
      await firstLine(proc);
      const status = await Promise.race([proc.exit, delay(timeout - 5000).then(() => 'still running')]);
      expect(status).not.toBe('still running');
    });

    it('rejects writes after stdin is closed', { timeout }, async () => {
      const box = await sandbox();
      const proc = await box.exec(probe(['echo']));
      const output = collect(proc.stdout);
      await proc.closeStdin();
      await expect(proc.write(Buffer.from('late\n'))).rejects.toThrow();
      await output;
      await proc.exit;
    });
  });
}

function isSignalled(status: { code: number | null; signal: string | null }, signal: string, code: number) {
  return status.signal === signal || status.code === code;
}

async function collect(stream: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** Waits for the probe's "ready" line, then keeps draining stdout so the process never blocks. */
async function firstLine(proc: SandboxProcess): Promise<void> {
  const iterator = proc.stdout[Symbol.asyncIterator]();
  let seen = '';
  while (!seen.includes('\n')) {
    const next = await iterator.next();
    if (next.done) throw new Error(`probe ended before its first line (got ${JSON.stringify(seen)})`);
    seen += Buffer.from(next.value).toString();
  }
  void (async () => {
    for (;;) {
      const next = await iterator.next();
      if (next.done) return;
    }
  })();
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
