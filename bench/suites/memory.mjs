// The bridge's memory: RSS at start, after 10k and 100k round trips, and while its client stops
// reading under a server that keeps sending (it must stay bounded: backpressure, not buffering).
import { toolCall } from '../lib/client.mjs';
import { memoryOf, sleep } from '../lib/proc.mjs';
import { round } from '../lib/stats.mjs';
import { startSession } from '../lib/targets.mjs';

const WINDOW = 16;

/** Pipelined echo calls (WINDOW in flight) until `upTo` have been answered. */
function pump(client, from, upTo) {
  return new Promise((resolve) => {
    let next = from;
    let answered = from - 1;
    const sendOne = () => {
      const id = next++;
      client.send(id, toolCall(id, 'echo', { text: 'hi' }), () => {
        answered++;
        if (answered === upTo) resolve();
        else if (next <= upTo) sendOne();
      });
    };
    for (let i = 0; i < WINDOW && next <= upTo; i++) sendOne();
  });
}

/** RSS after a short idle pause, the median of three reads. */
async function settledRss(pid) {
  const reads = [];
  for (let i = 0; i < 3; i++) {
    await sleep(100);
    reads.push(memoryOf(pid)?.rssKiB ?? Number.NaN);
  }
  return reads.sort((a, b) => a - b)[1];
}

export async function measureSteadyMemory(target, server, { checkpoints }) {
  const client = await startSession(target.argv(server));
  try {
    const result = { startKiB: await settledRss(client.pid), checkpoints: [] };
    let done = 0;
    const t0 = process.hrtime.bigint();
    for (const n of checkpoints) {
      await pump(client, done + 1, n);
      done = n;
      const elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
      result.checkpoints.push({
        roundTrips: n,
        rssKiB: await settledRss(client.pid),
        seconds: round(elapsed, 2),
      });
    }
    result.peakKiB = memoryOf(client.pid)?.hwmKiB;
    return result;
  } finally {
    await client.close();
  }
}

export async function measurePausedClient(target, floodServer, { pauseSeconds }) {
  const client = await startSession(target.argv(floodServer));
  try {
    await sleep(1000);
    const beforeKiB = memoryOf(client.pid)?.rssKiB;
    const bytesBefore = client.bytesIn;
    client.child.stdout.pause();
    const samples = [];
    const end = Date.now() + pauseSeconds * 1000;
    while (Date.now() < end) {
      await sleep(100);
      samples.push(memoryOf(client.pid)?.rssKiB ?? Number.NaN);
    }
    const pausedBytes = client.bytesIn - bytesBefore;
    client.child.stdout.resume();
    const resumedFrom = client.bytesIn;
    await sleep(500);
    const resumedBytes = client.bytesIn - resumedFrom;
    return {
      pauseSeconds,
      beforeKiB,
      maxDuringPauseKiB: Math.max(...samples),
      endOfPauseKiB: samples.at(-1),
      growthKiB: Math.max(...samples) - beforeKiB,
      /** Bytes read in the second before the pause: the flood's rate. */
      floodBytesPerSec: bytesBefore,
      bytesDuringPause: pausedBytes,
      bytesInHalfSecondAfter: resumedBytes,
      peakKiB: memoryOf(client.pid)?.hwmKiB,
    };
  } finally {
    await client.close();
  }
}
