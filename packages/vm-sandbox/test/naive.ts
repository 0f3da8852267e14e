import * as vm from 'node:vm';

/**
 * The deliberately naive design the attack suite uses as its control: host functions and host
 * objects passed straight into a vm context, one `runInContext` with a timeout, and the host
 * awaiting the app's promise. This is what the hardened sandbox replaces. Test-only.
 */
export async function runNaive(
  code: string,
  api: Record<string, unknown>,
  options: { timeoutMs: number; waitMs?: number },
): Promise<{ logs: string[]; durationMs: number }> {
  const logs: string[] = [];
  const log = (...args: unknown[]) => {
    logs.push(args.map((a) => String(a)).join(' '));
  };
  const context = vm.createContext({ console: { log, warn: log, error: log }, ...api });
  const started = performance.now();
  try {
    const promise = vm.runInContext(`(async () => {\n${code}\n})()`, context, {
      timeout: options.timeoutMs,
    }) as Promise<unknown>;
    await Promise.race([
      promise.then(
        () => undefined,
        (error: { message?: unknown } | undefined) => logs.push(`naive-rejection:${String(error?.message)}`),
      ),
      new Promise((resolve) => setTimeout(resolve, options.waitMs ?? 4000)),
    ]);
  } catch (error) {
    logs.push(`naive-error:${String((error as { message?: unknown } | undefined)?.message)}`);
  }
  return { logs, durationMs: performance.now() - started };
}
