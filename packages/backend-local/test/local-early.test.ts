/**
 * The early local start (early.ts): a real sandbox made before the program loaded is the
 * program's only when every input that shaped it is the program's own. Each case below changes
 * one input the program could give differently; each must end the early sandbox unused and start
 * the program's own. A check left out of the match makes its case fail (the early server would be
 * the one the program's exec gets).
 */
import { describe, expect, it } from 'vitest';
import type { SpawnedProcess } from '../src/child-process.js';
import { EarlyLocalStart } from '../src/early.js';
import { createLocalBackend, type LocalBackendOptions } from '../src/local.js';
import { processesWithEnv, waitUntil } from './binary.js';

const hostEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root' };
const command = ['sleep', '30'];
const TTL = 60_000;

/** Live processes whose environment holds `EARLY_MARK=<mark>`. */
const marked = (mark: string) => processesWithEnv(`EARLY_MARK=${mark}`);

interface ProgramStart {
  readonly options?: Partial<LocalBackendOptions>;
  readonly spec?: Record<string, unknown>;
  readonly command?: readonly string[];
}

/** An early start for `mark`, then the program's own start with `change` applied. */
async function startBoth(mark: string, change: ProgramStart = {}) {
  const early = new EarlyLocalStart({ command, env: { EARLY_MARK: mark }, ttlMs: TTL }, hostEnv);
  await early.started();
  const before = marked(mark);
  const logs: string[] = [];
  const logger = { debug: (m: string) => logs.push(m), info() {}, warn() {}, error() {} };
  const backend = createLocalBackend({
    hostEnv,
    logger,
    settings: {},
    takeEarlyStart: () => early,
    ...change.options,
  });
  const sandbox = await backend.create({
    sessionId: 'program',
    env: { EARLY_MARK: mark },
    ttlMs: TTL,
    mounts: [],
    ...change.spec,
  });
  const argv = change.command ?? command;
  const prepared = (await sandbox.prepare?.(argv, { stderr: () => {} })) ?? argv;
  // Local processes are child processes of this one, with their pid.
  const proc = (await sandbox.exec(prepared)) as SpawnedProcess;
  return { before, proc, logs, close: () => sandbox.close() };
}

describe('EarlyLocalStart: the sandbox made before the program loaded', () => {
  it('is the sandbox and server the program gets for exactly its inputs', async () => {
    const mark = `early-local-same-${process.pid}`;
    const { before, proc, logs, close } = await startBoth(mark);
    expect(before.length).toBeGreaterThan(0);
    expect(before).toContain(proc.pid);
    expect(logs).toContain('the sandbox was made early, while the program loaded');
    await close();
    await waitUntil(() => marked(mark).length === 0, 'the end of the session');
  });

  it.each<[string, ProgramStart]>([
    ['another server environment', { spec: { env: { EARLY_MARK: 'x', MORE: '1' } } }],
    ['another TTL', { spec: { ttlMs: TTL + 1 } }],
    ['a mount', { spec: { mounts: [{ hostPath: '/usr/share', sandboxPath: '/srv/share', mode: 'ro' }] } }],
    ['an egress grant', { spec: { network: { allow: ['example.com'] } } }],
    ['a process limit', { spec: { limits: { maxProcesses: 64 } } }],
    ['a backend setting', { options: { settings: { denialHints: 'off' } } }],
    ['another host environment', { options: { hostEnv: { ...hostEnv, NODE_EXTRA_CA_CERTS: '/x' } } }],
    ['another backend option', { options: { defaultMaxProcesses: 64 } }],
    ['another command', { command: ['sleep', '31'] }],
  ])('is ended unused, and the program starts its own, for %s', async (_what, change) => {
    const mark = `early-local-${_what.replace(/\W+/g, '-')}-${process.pid}`;
    const { before, proc, close } = await startBoth(mark, change);
    expect(before.length).toBeGreaterThan(0);
    expect(before).not.toContain(proc.pid);
    // The early sandbox's processes end; the program's own runs.
    await waitUntil(() => before.every((pid) => !marked(mark).includes(pid)), 'the end of the early sandbox');
    expect(() => process.kill(proc.pid, 0)).not.toThrow();
    await close();
  });

  it('keeps the output of a server that exited before the program took it', async () => {
    const quick = ['sh', '-c', 'echo last words >&2; exit 3'];
    const early = new EarlyLocalStart({ command: quick, env: {}, ttlMs: TTL }, hostEnv);
    await early.started();
    // Long enough for the server to have exited, and for Node to have drained what nobody read.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const backend = createLocalBackend({ hostEnv, settings: {}, takeEarlyStart: () => early });
    const sandbox = await backend.create({ sessionId: 's', env: {}, ttlMs: TTL, mounts: [] });
    const proc = await sandbox.exec((await sandbox.prepare?.(quick, { stderr: () => {} })) ?? quick);
    let stderr = '';
    for await (const chunk of proc.stderr) stderr += Buffer.from(chunk).toString();
    expect((await proc.exit).code).toBe(3);
    expect(stderr).toContain('last words');
    await sandbox.close();
  });

  it('discard() ends the early sandbox and says whether one was made', async () => {
    const mark = `early-local-discard-${process.pid}`;
    const early = new EarlyLocalStart({ command, env: { EARLY_MARK: mark }, ttlMs: TTL }, hostEnv);
    await early.started();
    expect(marked(mark).length).toBeGreaterThan(0);
    expect(await early.discard()).toBe(true);
    await waitUntil(() => marked(mark).length === 0, 'the end of the early sandbox');
    // Once: a later adopt finds nothing to adopt.
    expect(
      await early.adopt({ hostEnv, settings: {} }, { sessionId: 's', env: {}, ttlMs: TTL }),
    ).toBeUndefined();
  });
});
