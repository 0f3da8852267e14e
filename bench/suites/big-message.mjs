// One 20 MB message each way, each on a fresh session so the bridge's peak RSS (VmHWM) is its own.
import { toolCall } from '../lib/client.mjs';
import { memoryOf } from '../lib/proc.mjs';
import { round } from '../lib/stats.mjs';
import { startSession, withTimeout } from '../lib/targets.mjs';

export const BIG_BYTES = 20_000_000;

async function once(target, server, request) {
  const client = await startSession(target.argv(server));
  try {
    const before = target.bridge ? memoryOf(client.pid) : undefined;
    const t0 = process.hrtime.bigint();
    const size = await withTimeout(client.call(1, request), 60_000, '20 MB message');
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    const after = target.bridge ? memoryOf(client.pid) : undefined;
    return {
      ms: round(ms),
      responseBytes: size,
      bridgeRssBeforeKiB: before?.rssKiB,
      bridgePeakKiB: after?.hwmKiB,
    };
  } finally {
    await client.close();
  }
}

export async function measureBigMessages(target, server) {
  // Server → client: the `big` tool answers with a 20 MB text.
  const toClient = await once(target, server, toolCall(1, 'big', { bytes: BIG_BYTES }));
  // Client → server: a 20 MB argument the `add` tool ignores; the answer is small.
  const pad = 'x'.repeat(BIG_BYTES);
  const toServer = await once(target, server, toolCall(1, 'add', { a: 1, b: 2, pad }));
  return { toClient, toServer, bytes: BIG_BYTES };
}
