// Round-trip latency: sequential tools/call of a trivial tool (echo), one at a time, after warm-up.
// Every target's session stays open and the calls run in rounds that alternate between targets,
// so a machine whose load drifts during the run affects each target alike.
import { toolCall } from '../lib/client.mjs';
import { cpuMsOf, memoryOf } from '../lib/proc.mjs';
import { percentile, round } from '../lib/stats.mjs';
import { startSession } from '../lib/targets.mjs';

const ROUNDS = 20;

async function sequential(client, requests, from, to, samples, offset) {
  for (let i = from; i < to; i++) {
    const t0 = process.hrtime.bigint();
    await client.call(i + 1, requests[i]);
    if (samples) samples[offset + i - from] = Number(process.hrtime.bigint() - t0) / 1000;
  }
}

/** `entries`: [[name, target]]; resolves with { name: stats | { error } }. */
export async function measureLatency(entries, server, { calls, warmup }, log) {
  const total = warmup + calls;
  // Pre-serialized, so the client's own cost per call is a write and a lookup.
  const requests = new Array(total);
  for (let i = 0; i < total; i++) requests[i] = toolCall(i + 1, 'echo', { text: 'hi' });
  const sessions = [];
  const out = {};
  for (const [name, target] of entries) {
    try {
      const client = await startSession(target.argv(server));
      await sequential(client, requests, 0, warmup);
      sessions.push({ name, target, client, samples: new Float64Array(calls), cpuMs: 0 });
    } catch (error) {
      out[name] = { error: error.message };
      log?.(`latency: ${name} failed: ${error.message}`);
    }
  }
  try {
    const perRound = Math.ceil(calls / ROUNDS);
    for (let r = 0; r < ROUNDS; r++) {
      const from = warmup + r * perRound;
      const to = Math.min(total, from + perRound);
      for (const s of sessions) {
        const cpu0 = cpuMsOf(s.client.pid);
        await sequential(s.client, requests, from, to, s.samples, r * perRound);
        s.cpuMs += cpuMsOf(s.client.pid) - cpu0;
      }
    }
    for (const s of sessions) {
      const samples = s.samples.sort();
      let sum = 0;
      for (const v of samples) sum += v;
      out[s.name] = {
        calls,
        warmup,
        rounds: ROUNDS,
        p50Us: round(percentile(samples, 50)),
        p95Us: round(percentile(samples, 95)),
        p99Us: round(percentile(samples, 99)),
        meanUs: round(sum / calls),
        maxUs: round(samples[calls - 1]),
        bridgeRssKiB: s.target.bridge ? memoryOf(s.client.pid)?.rssKiB : undefined,
        /** CPU of the bridge process (of the server, for direct) per round trip. */
        processCpuUsPerCall: round((s.cpuMs * 1000) / calls),
      };
    }
  } finally {
    await Promise.all(sessions.map((s) => s.client.close()));
  }
  return Object.fromEntries(entries.map(([name]) => [name, out[name]]));
}
