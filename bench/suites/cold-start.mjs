// Cold start: from spawn() to the answer to `initialize`, sent at once. Runs alternate between
// targets so a drifting machine affects each the same.
import { readFileSync } from 'node:fs';
import { median, round } from '../lib/stats.mjs';
import { tempTrace, timeToInitialize } from '../lib/targets.mjs';

/**
 * `cases`: [{ key, argv, cwd?, runs? }]. One untimed start each first (it warms caches, and a
 * case that cannot start is dropped with its error), then `runs` timed starts each.
 */
export async function measureColdStarts(cases, { runs, timeoutMs = 30_000, warmTimeoutMs = timeoutMs }) {
  const results = {};
  const live = [];
  for (const c of cases) {
    try {
      await timeToInitialize(c.argv, { cwd: c.cwd, timeoutMs: warmTimeoutMs });
      live.push(c);
      results[c.key] = { samplesMs: [] };
    } catch (error) {
      results[c.key] = { skipped: error.message };
    }
  }
  for (let i = 0; i < runs; i++) {
    for (const c of live) {
      if (i >= (c.runs ?? runs)) continue;
      const entry = results[c.key];
      try {
        entry.samplesMs.push(round(await timeToInitialize(c.argv, { cwd: c.cwd, timeoutMs }), 2));
      } catch (error) {
        // A start that fails is counted, not timed; the case is dropped only if none succeeds.
        entry.failures = [...(entry.failures ?? []), error.message];
      }
    }
  }
  for (const c of live) {
    if (!c.traced || results[c.key].skipped) continue;
    try {
      results[c.key].phasesMs = await phases(c, timeoutMs);
    } catch (error) {
      results[c.key].phasesError = error.message;
    }
  }
  for (const [key, entry] of Object.entries(results)) {
    if (entry.skipped) continue;
    if (entry.samplesMs.length === 0) {
      results[key] = { skipped: entry.failures?.at(-1) ?? 'no start succeeded' };
      continue;
    }
    entry.medianMs = round(median(entry.samplesMs), 2);
    entry.minMs = Math.min(...entry.samplesMs);
    entry.maxMs = Math.max(...entry.samplesMs);
  }
  return results;
}

const PHASE_RUNS = 3;

/**
 * Where a bridge's cold start goes, from its own trace (medians of a few extra starts with
 * `--trace`): the binary starting up (spawn → session start, wall clock, ms resolution), creating
 * the sandbox, preparing and starting the command, and the server's own start to its first reply.
 */
async function phases(c, timeoutMs) {
  const runs = [];
  for (let i = 0; i < PHASE_RUNS; i++) {
    const trace = tempTrace();
    try {
      const spawnedAt = Date.now();
      await timeToInitialize(c.traced(trace.path), { cwd: c.cwd, timeoutMs });
      const first = {};
      for (const line of readFileSync(trace.path, 'utf8').split('\n')) {
        if (line === '') continue;
        const record = JSON.parse(line);
        const key = record.type === 'message' ? `message ${record.dir}` : record.type;
        first[key] ??= record;
      }
      const t = (key) => first[key]?.t;
      const start = first['session-start'];
      runs.push({
        binaryStart: Date.parse(start.ts) - spawnedAt,
        createSandbox: t('sandbox-created') - t('session-start'),
        prepareAndExec: t('process-start') - t('sandbox-created'),
        serverToFirstReply: t('message server->client') - t('process-start'),
      });
    } finally {
      trace.dispose();
    }
  }
  const out = {};
  for (const key of Object.keys(runs[0])) out[key] = round(median(runs.map((r) => r[key])), 1);
  return out;
}
