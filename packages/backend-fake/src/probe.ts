import type { FakeProgram } from './program.js';

/**
 * The conformance probe as an in-memory program, mode for mode the same as core's Node probe:
 * echo | exit N | stderr TEXT | env | sleep | hang | big N.
 */
export const conformanceProbe: FakeProgram = async (ctx) => {
  const [mode, arg] = ctx.args;
  switch (mode) {
    case 'echo':
      for await (const chunk of ctx.stdin) await ctx.stdout.write(chunk);
      return 0;
    case 'exit':
      await ctx.stdout.write('bye\n');
      return Number(arg);
    case 'stderr':
      await ctx.stderr.write(arg ?? '');
      await ctx.stdout.write('out');
      return 0;
    case 'env':
      await ctx.stdout.write(`${JSON.stringify(ctx.env)}\n`);
      return 0;
    case 'sleep':
      await ctx.stdout.write('ready\n');
      await ctx.sleep(Number.POSITIVE_INFINITY);
      return 0;
    case 'hang':
      ctx.onSignal('SIGTERM', () => undefined);
      await ctx.stdout.write('ready\n');
      await ctx.sleep(Number.POSITIVE_INFINITY);
      return 0;
    case 'big': {
      const block = new Uint8Array(65536).fill(120);
      for (let left = Number(arg); left > 0; left -= block.length) {
        await ctx.stdout.write(left >= block.length ? block : block.subarray(0, left));
      }
      await ctx.stdout.write('\n');
      return 0;
    }
    default:
      await ctx.stderr.write(`unknown probe mode ${String(mode)}\n`);
      return 64;
  }
};

/**
 * Runs the conformance suite's probe on the fake backend: pass it as `probe` to
 * `runConformanceSuite`. Typed structurally so this package's types do not pull in vitest.
 */
export const fakeProbe: (args: readonly string[]) => string[] = (args) => ['conformance-probe', ...args];
