import type { ExecOptions, Sandbox } from '@mcpsandbox/core';

export interface RunResult {
  readonly code: number | null;
  readonly signal: string | null;
  readonly stdout: string;
  readonly stderr: string;
}

export async function collect(stream: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** Runs a command to completion with empty stdin. */
export async function run(
  box: Sandbox,
  command: readonly string[],
  options?: ExecOptions,
): Promise<RunResult> {
  const proc = await box.exec(command, options);
  const [stdout, stderr] = [collect(proc.stdout), collect(proc.stderr)];
  await proc.closeStdin();
  const status = await proc.exit;
  return { ...status, stdout: (await stdout).toString(), stderr: (await stderr).toString() };
}
