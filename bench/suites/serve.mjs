// `serve` over Streamable HTTP: a few real SDK clients call `echo` back-to-back (one call in flight
// each) through each front of the same stdio server — `mcp-sandbox serve` (default backend, and
// `--backend none` for the bridge's own cost), supergateway, and the server on the SDK's own HTTP
// server (direct) — in both protocol eras. Fronts take turns in rounds, all open at once, so a
// change of load on the machine hits each alike. Requests per second over the measured rounds,
// p50/p99 of each call's round trip as the client sees it, CPU of the front process per call.
import { cpuMsOf, memoryOf } from '../lib/proc.mjs';
import { percentile, round } from '../lib/stats.mjs';

export const ERAS = ['2025', '2026'];
const LEGACY = '2025-11-25';
const MODERN = '2026-07-28';

/** A real SDK client over Streamable HTTP: the v1 SDK for 2025-11-25, the v2 SDK pinned to 2026-07-28. */
async function connectClient(era, url, headers) {
  if (era === '2025') {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import(
      '@modelcontextprotocol/sdk/client/streamableHttp.js'
    );
    const client = new Client({ name: 'bench', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
    await client.connect(transport);
    return checkedEra(client, transport.protocolVersion, LEGACY);
  }
  const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
  const client = new Client(
    { name: 'bench', version: '1.0.0' },
    { capabilities: {}, versionNegotiation: { mode: { pin: MODERN } } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return checkedEra(client, client.getNegotiatedProtocolVersion(), MODERN);
}

/** A front that answered in another revision would be measured in the wrong era's row. */
async function checkedEra(client, negotiated, wanted) {
  if (negotiated === wanted) return client;
  await client.close();
  throw new Error(`negotiated ${negotiated ?? 'no version'}, not ${wanted}`);
}

const ARGS = { name: 'echo', arguments: { text: 'hi' } };

/** Every client calls back-to-back until `ms` have passed; latencies (µs) go into `samples`. */
async function drive(clients, ms, samples) {
  const until = performance.now() + ms;
  let calls = 0;
  await Promise.all(
    clients.map(async (client) => {
      while (performance.now() < until) {
        const t0 = process.hrtime.bigint();
        const result = await client.callTool(ARGS);
        if (result.content?.[0]?.text !== 'echo: hi')
          throw new Error(`unexpected result ${JSON.stringify(result)}`);
        samples?.push(Number(process.hrtime.bigint() - t0) / 1000);
        calls++;
      }
    }),
  );
  return calls;
}

async function openFront(front, era, clients) {
  const running = await front.start(era);
  try {
    const open = [];
    for (let i = 0; i < clients; i++) open.push(await connectClient(era, running.url, running.headers));
    return { name: front.name, running, clients: open, samples: [], calls: 0, seconds: 0, cpuMs: 0 };
  } catch (error) {
    await running.stop();
    const tail = running.stderr().trim().split('\n').slice(-2).join(' / ');
    throw new Error(`${error.message}${tail ? `: ${tail}` : ''}`);
  }
}

async function closeFront(open) {
  await Promise.allSettled(open.clients.map((c) => c.close()));
  await open.running.stop();
}

/** One era: every front opened, a warm-up each, then `rounds` alternating rounds. */
async function measureEra(fronts, era, { clients, rounds, roundSeconds, warmupSeconds }, log) {
  const out = {};
  const open = [];
  for (const front of fronts) {
    try {
      log?.(`serve ${era}: ${front.name}`);
      const o = await openFront(front, era, clients);
      open.push(o);
      await drive(o.clients, warmupSeconds * 1000);
    } catch (error) {
      out[front.name] = { error: error.message };
      log?.(`serve ${era}: ${front.name} failed: ${error.message}`);
    }
  }
  try {
    for (let r = 0; r < rounds; r++) {
      for (const o of open) {
        if (out[o.name]?.error) continue;
        const cpu0 = cpuMsOf(o.running.pid);
        const t0 = performance.now();
        try {
          o.calls += await drive(o.clients, roundSeconds * 1000, o.samples);
        } catch (error) {
          out[o.name] = { error: error.message };
          log?.(`serve ${era}: ${o.name} failed: ${error.message}`);
          continue;
        }
        o.seconds += (performance.now() - t0) / 1000;
        o.cpuMs += cpuMsOf(o.running.pid) - cpu0;
      }
    }
    for (const o of open) {
      if (out[o.name]?.error) continue;
      const sorted = Float64Array.from(o.samples).sort();
      out[o.name] = {
        clients,
        rounds,
        calls: o.calls,
        seconds: round(o.seconds, 2),
        requestsPerSec: round(o.calls / o.seconds, 0),
        p50Us: round(percentile(sorted, 50)),
        p99Us: round(percentile(sorted, 99)),
        /** CPU of the front process (serve's bridge, supergateway, or the direct server) per call. */
        processCpuUsPerCall: round((o.cpuMs * 1000) / o.calls),
        frontRssKiB: memoryOf(o.running.pid)?.rssKiB,
      };
    }
  } finally {
    await Promise.all(open.map(closeFront));
  }
  return Object.fromEntries(fronts.map((f) => [f.name, out[f.name]]));
}

/** `{ '2025': { front: stats | { error } }, '2026': … }`. */
export async function measureServe(fronts, settings, log) {
  const results = {};
  for (const era of ERAS) results[era] = await measureEra(fronts, era, settings, log);
  return results;
}
