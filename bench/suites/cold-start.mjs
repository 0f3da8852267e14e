// Cold start: from spawn() to the answer to `initialize`, sent at once. Runs alternate between
// targets so a drifting machine affects each the same.
import { initializeRequest, RawClient } from '../lib/client.mjs';
import { median, round } from '../lib/stats.mjs';
import { withTimeout } from '../lib/targets.mjs';

async function oneStart(argv, cwd, timeoutMs) {
  const client = new RawClient(argv, cwd ? { cwd } : {});
  try {
    await withTimeout(
      Promise.race([
        client.call(0, initializeRequest(0)),
        client.exited.then((status) => {
          throw new Error(`exited (code ${status.code}, signal ${status.signal}) before answering`);
        }),
      ]),
      timeoutMs,
      'first response',
    );
    return Number(process.hrtime.bigint() - client.spawnedAt) / 1e6;
  } catch (error) {
    const tail = client.stderrTail.trim().split('\n').slice(-2).join(' / ');
    throw new Error(`${error.message}${tail ? `: ${tail}` : ''}`);
  } finally {
    await client.close(3_000);
  }
}

/**
 * `cases`: [{ key, argv, cwd? }]. One untimed start each first (it warms caches, and a case that
 * cannot start is dropped with its error), then `runs` timed starts each.
 */
export async function measureColdStarts(cases, { runs, timeoutMs = 30_000, warmTimeoutMs = timeoutMs }) {
  const results = {};
  const live = [];
  for (const c of cases) {
    try {
      await oneStart(c.argv, c.cwd, warmTimeoutMs);
      live.push(c);
      results[c.key] = { samplesMs: [] };
    } catch (error) {
      results[c.key] = { skipped: error.message };
    }
  }
  for (let i = 0; i < runs; i++) {
    for (const c of live) {
      const entry = results[c.key];
      if (entry.skipped) continue;
      try {
        entry.samplesMs.push(round(await oneStart(c.argv, c.cwd, timeoutMs), 2));
      } catch (error) {
        results[c.key] = { skipped: error.message };
      }
    }
  }
  for (const entry of Object.values(results)) {
    if (entry.skipped) continue;
    entry.medianMs = round(median(entry.samplesMs), 2);
    entry.minMs = Math.min(...entry.samplesMs);
    entry.maxMs = Math.max(...entry.samplesMs);
  }
  return results;
}
