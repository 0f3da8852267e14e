import { describe, expect, it } from 'vitest';
import { createLocalBackend } from '../src/index.js';
import { planLimits } from '../src/limits.js';
import { run } from './helpers.js';

const HOG =
  'const a=[];try{for(let i=0;i<64;i++)a.push(Buffer.alloc(16*1024*1024,1));console.log("allocated")}catch(e){console.log("refused")}';

const context = { prlimit: true, defaultMaxProcesses: 256, hardLimits: {} };

describe('planLimits', () => {
  it('always limits processes, and the rest when asked', () => {
    expect(planLimits(undefined, context).prlimitArgs).toEqual(['--nproc=256:256']);
    const plan = planLimits({ maxProcesses: 32, openFiles: 64, memoryBytes: 1 << 30 }, context);
    expect(plan.prlimitArgs).toEqual(['--nproc=32:32', '--nofile=64:64', `--data=${1 << 30}:${1 << 30}`]);
    expect(plan.notes.join('\n')).toContain('per process (RLIMIT_DATA)');
  });

  it('says which limits it cannot enforce without prlimit', () => {
    const plan = planLimits({ openFiles: 64 }, { ...context, prlimit: false });
    expect(plan.prlimitArgs).toEqual([]);
    expect(plan.notEnforced).toEqual(['maxProcesses', 'openFiles']);
    expect(plan.notes.join('\n')).toContain('cannot be enforced');
  });

  it('clamps to the host hard limit, and says so', () => {
    const plan = planLimits({ openFiles: 1_000_000 }, { ...context, hardLimits: { nofile: 4096 } });
    expect(plan.enforced.openFiles).toBe(4096);
    expect(plan.notes.join('\n')).toContain('hard limit');
  });
});

describe('limits inside the sandbox', () => {
  it('applies spec.limits to the server, which cannot raise them, and warns on stderr', async () => {
    const warnings: string[] = [];
    const logger = { debug() {}, info() {}, warn: (m: string) => warnings.push(m), error() {} };
    const box = await createLocalBackend({ logger }).create({
      sessionId: 'limits',
      env: {},
      ttlMs: 30_000,
      limits: { maxProcesses: 40, openFiles: 50, memoryBytes: 512 * 1024 * 1024 },
    });
    try {
      const limits = await run(box, ['cat', '/proc/self/limits']);
      expect(limits.stdout).toMatch(/Max processes\s+40\s+40/);
      expect(limits.stdout).toMatch(/Max open files\s+50\s+50/);
      expect(limits.stdout).toMatch(/Max data size\s+536870912\s+536870912/);
      const raise = await run(box, ['prlimit', '--pid', '0', '--nofile=100:100']);
      expect(raise.code).not.toBe(0);
      // 1 GiB against a 512 MiB limit: V8 either reports the failed allocation or aborts.
      const hog = await run(box, ['node', '-e', HOG]);
      expect(hog.stdout).not.toContain('allocated');
      expect(hog.stdout.includes('refused') || hog.code !== 0).toBe(true);
      expect(warnings.join('\n')).toContain('memoryBytes is enforced per process');
    } finally {
      await box.close();
    }
  });

  it('control: the same allocation succeeds without a memory limit', async () => {
    const box = await createLocalBackend().create({ sessionId: 'no-limits', env: {}, ttlMs: 30_000 });
    try {
      expect((await run(box, ['node', '-e', HOG])).stdout.trim()).toBe('allocated');
    } finally {
      await box.close();
    }
  });

  it('takes the default process limit from --backend-option maxProcesses', async () => {
    const box = await createLocalBackend({ settings: { maxProcesses: '33' } }).create({
      sessionId: 'settings',
      env: {},
      ttlMs: 30_000,
    });
    try {
      expect((await run(box, ['cat', '/proc/self/limits'])).stdout).toMatch(/Max processes\s+33\s+33/);
    } finally {
      await box.close();
    }
    await expect(
      createLocalBackend({ settings: { maxProcesses: 'many' } }).create({
        sessionId: 's',
        env: {},
        ttlMs: 1000,
      }),
    ).rejects.toMatchObject({ code: 'E_USAGE' });
  });
});
