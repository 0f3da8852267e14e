import { describe, expect, it } from 'vitest';
import type { SpawnedProcess } from '../src/child-process.js';
import { createNoneBackend, EarlyStart } from '../src/none.js';
import { processesWithEnv, waitUntil } from './binary.js';

const hostEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
const command = ['sleep', '30'];

/** Live processes whose environment holds `EARLY_MARK=<mark>`. */
const marked = (mark: string) => processesWithEnv(`EARLY_MARK=${mark}`);

async function sessionWith(env: Record<string, string>, early: EarlyStart) {
  const backend = createNoneBackend({ hostEnv, takeEarlyStart: () => early });
  const sandbox = await backend.create({ sessionId: 'early', env, ttlMs: 60_000 });
  // The none backend's processes are child processes, with their pid.
  return {
    exec: async (argv: readonly string[]) => (await sandbox.exec(argv)) as SpawnedProcess,
    close: () => sandbox.close(),
  };
}

describe('EarlyStart: a server started before the program loaded', () => {
  it('keeps the output of a server that exited before the session took it', async () => {
    const quick = ['sh', '-c', 'echo last words >&2; exit 3'];
    const early = new EarlyStart(quick, {}, hostEnv);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const sandbox = await sessionWith({}, early);
    const proc = await sandbox.exec(quick);
    let stderr = '';
    for await (const chunk of proc.stderr) stderr += Buffer.from(chunk).toString();
    expect((await proc.exit).code).toBe(3);
    expect(stderr).toContain('last words');
    await sandbox.close();
  });

  it('is the process the exec with exactly its command and environment gets', async () => {
    const mark = `same-${process.pid}`;
    const early = new EarlyStart(command, { EARLY_MARK: mark }, hostEnv);
    await waitUntil(() => marked(mark).length === 1, 'the early server');
    const [pid] = marked(mark);
    const sandbox = await sessionWith({ EARLY_MARK: mark }, early);
    const proc = await sandbox.exec(command);
    expect(proc.pid).toBe(pid);
    expect(marked(mark)).toEqual([pid]);
    await sandbox.close();
    await waitUntil(() => marked(mark).length === 0, 'the end of the session');
  });

  it('is ended, and a server of its own started, when the environment differs', async () => {
    const mark = `other-${process.pid}`;
    const early = new EarlyStart(command, { EARLY_MARK: mark }, hostEnv);
    await waitUntil(() => marked(mark).length === 1, 'the early server');
    const sandbox = await sessionWith({ EARLY_MARK: `${mark}-b` }, early);
    const proc = await sandbox.exec(command);
    await waitUntil(() => marked(mark).length === 0, 'the early server to end');
    expect(marked(`${mark}-b`)).toEqual([proc.pid]);
    await sandbox.close();
  });

  it('is ended, and a server of its own started, when the command differs', async () => {
    const mark = `argv-${process.pid}`;
    const early = new EarlyStart(command, { EARLY_MARK: mark }, hostEnv);
    const sandbox = await sessionWith({ EARLY_MARK: mark }, early);
    const proc = await sandbox.exec(['sleep', '31']);
    await waitUntil(() => marked(mark).length === 1, 'one server');
    expect(marked(mark)).toEqual([proc.pid]);
    await sandbox.close();
  });

  it('is ended by close() when no exec took it, and by discard() before any sandbox', async () => {
    const mark = `unused-${process.pid}`;
    const early = new EarlyStart(command, { EARLY_MARK: mark }, hostEnv);
    await waitUntil(() => marked(mark).length === 1, 'the early server');
    const sandbox = await sessionWith({ EARLY_MARK: mark }, early);
    await sandbox.close();
    expect(marked(mark)).toEqual([]);
    const alone = new EarlyStart(command, { EARLY_MARK: `${mark}-2` }, hostEnv);
    await waitUntil(() => marked(`${mark}-2`).length === 1, 'the second early server');
    expect(await alone.discard()).toBeGreaterThan(0);
    expect(marked(`${mark}-2`)).toEqual([]);
    expect(await alone.discard()).toBeUndefined();
  });
});
