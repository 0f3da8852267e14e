// Throughput: 1 MiB tool results streamed back-to-back (a few requests always in flight) for a
// fixed time; the rate is the bytes the client read over the measured interval. Targets take
// turns in slices, all sessions open, so load drift on the machine affects each alike.
import { toolCall } from '../lib/client.mjs';
import { cpuMsOf, sleep } from '../lib/proc.mjs';
import { round } from '../lib/stats.mjs';
import { startSession } from '../lib/targets.mjs';

export const RESULT_BYTES = 1024 * 1024;
const IN_FLIGHT = 4;
const SLICES = 3;

class Stream {
  constructor(client) {
    this.client = client;
    this.id = 1;
    this.responses = 0;
    this.running = false;
    this.inflight = 0;
    this.idle = Promise.resolve();
  }

  start() {
    this.running = true;
    let settle;
    this.idle = new Promise((resolve) => {
      settle = resolve;
    });
    const sendOne = () => {
      const id = this.id++;
      this.inflight++;
      this.client.send(id, toolCall(id, 'big', { bytes: RESULT_BYTES }), () => {
        this.inflight--;
        this.responses++;
        if (this.running) sendOne();
        else if (this.inflight === 0) settle();
      });
    };
    for (let i = 0; i < IN_FLIGHT; i++) sendOne();
  }

  /** Stops sending and waits for what is in flight. */
  stop() {
    this.running = false;
    return this.idle;
  }
}

export async function measureThroughput(entries, server, { seconds, warmupSeconds }, log) {
  const sessions = [];
  const out = {};
  for (const [name, target] of entries) {
    try {
      const client = await startSession(target.argv(server));
      sessions.push({
        name,
        target,
        stream: new Stream(client),
        bytes: 0,
        responses: 0,
        elapsed: 0,
        cpuMs: 0,
      });
    } catch (error) {
      out[name] = { error: error.message };
      log?.(`throughput: ${name} failed: ${error.message}`);
    }
  }
  try {
    for (let slice = 0; slice < SLICES; slice++) {
      for (const s of sessions) {
        const { stream } = s;
        stream.start();
        await sleep(((slice === 0 ? warmupSeconds : warmupSeconds / 3) * 1000) | 0);
        const bytes0 = stream.client.bytesIn;
        const responses0 = stream.responses;
        const t0 = process.hrtime.bigint();
        const cpu0 = cpuMsOf(stream.client.pid);
        await sleep((seconds * 1000) / SLICES);
        s.cpuMs += cpuMsOf(stream.client.pid) - cpu0;
        s.bytes += stream.client.bytesIn - bytes0;
        s.responses += stream.responses - responses0;
        s.elapsed += Number(process.hrtime.bigint() - t0) / 1e9;
        await stream.stop();
        s.target.afterSlice?.();
      }
    }
    for (const s of sessions) {
      out[s.name] = {
        seconds: round(s.elapsed, 3),
        slices: SLICES,
        bytes: s.bytes,
        responses: s.responses,
        mbPerSec: round(s.bytes / 1e6 / s.elapsed),
        /** CPU of the bridge process (of the server, for direct) per MiB delivered. */
        processCpuMsPerMiB: round(s.cpuMs / (s.bytes / 2 ** 20), 2),
      };
    }
  } finally {
    await Promise.all(sessions.map((s) => s.stream.client.close()));
  }
  return Object.fromEntries(entries.map(([name]) => [name, out[name]]));
}
