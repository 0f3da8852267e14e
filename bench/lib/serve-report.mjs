// The `serve` suite's tables and PASS/MISS targets (kept apart from report.mjs, which is long).
import { round } from './stats.mjs';

const ERA_NAMES = { 2025: '2025-11-25 (sessions)', 2026: '2026-07-28 (stateless)' };
const dash = '—';
const fmt = (value, digits = 1) =>
  value === undefined ? dash : round(value, digits).toLocaleString('en-US');
const times = (value, base) => (value === undefined || !base ? dash : `${(value / base).toFixed(2)}×`);

/** Markdown lines for the `serve` results (`{ era: { front: stats | { error } } }`). */
export function serveTables(serve, settings) {
  const out = [];
  const s = settings ?? {};
  out.push(
    `### serve over Streamable HTTP: ${s.clients ?? '?'} SDK clients calling \`echo\` back-to-back, ${s.rounds ?? '?'} rounds of ${s.roundSeconds ?? '?'} s per front`,
    '',
    "The same stdio server (the SDK, `bench/servers/sdk-echo.mjs`) behind `mcp-sandbox serve` (default backend `local`, and `--backend none`), behind supergateway, and on the SDK's own Streamable HTTP server (`direct`). Latency is each call's round trip as the client sees it.",
    '',
  );
  for (const [era, fronts] of Object.entries(serve)) {
    const base = fronts.supergateway;
    const rows = Object.entries(fronts).map(([name, r]) => {
      if (r === undefined) return [name, 'not measured', '', '', '', '', '', ''];
      if (r.error) return [name, `skipped: ${r.error}`, '', '', '', '', '', ''];
      return [
        name,
        fmt(r.requestsPerSec, 0),
        fmt(r.p50Us / 1000, 2),
        fmt(r.p99Us / 1000, 2),
        name === 'supergateway' ? '1.00×' : times(r.p50Us, base?.p50Us),
        name === 'supergateway' ? '1.00×' : times(r.requestsPerSec, base?.requestsPerSec),
        fmt(r.processCpuUsPerCall, 0),
        fmt(r.frontRssKiB === undefined ? undefined : r.frontRssKiB / 1024, 1),
      ];
    });
    const headers = [
      'front',
      'requests/s',
      'p50 ms',
      'p99 ms',
      'p50 vs supergateway',
      'req/s vs supergateway',
      'front CPU µs/call ²',
      'front RSS MiB',
    ];
    out.push(`#### ${ERA_NAMES[era] ?? era}`, '', `| ${headers.join(' | ')} |`);
    out.push(`|${headers.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`);
    for (const row of rows) out.push(`| ${row.join(' | ')} |`);
    out.push('');
  }
  out.push(
    "² CPU time (user + system) of the process the client connects to, per call: `serve`'s bridge (its servers and sandboxes are other processes), supergateway, or the direct server (which also runs the tool).",
    '',
  );
  return out;
}

/**
 * The targets: `serve` (default backend) against supergateway, the other way to put a stdio
 * server on HTTP, in each era; and the bridge's own work (`--backend none`) against the SDK's
 * own HTTP server doing the same HTTP work plus the tool. See docs/performance.md for why.
 */
export function serveTargets(serve, add) {
  for (const era of ['2025', '2026']) {
    const fronts = serve?.[era];
    const name = ERA_NAMES[era];
    const why = (r) => r?.error ?? (serve ? 'not measured' : 'serve not measured');
    const ours = fronts?.serve;
    const theirs = fronts?.supergateway;
    const p50Label = `serve p50 ≤ 1.2 × supergateway p50, ${name}`;
    const rpsLabel = `serve requests/s ≥ 0.8 × supergateway, ${name}`;
    if (ours?.p50Us !== undefined && theirs?.p50Us !== undefined) {
      add(
        ours.p50Us <= 1.2 * theirs.p50Us ? 'PASS' : 'MISS',
        p50Label,
        `serve ${fmt(ours.p50Us / 1000, 2)} ms vs supergateway ${fmt(theirs.p50Us / 1000, 2)} ms: ${times(ours.p50Us, theirs.p50Us)}`,
      );
      add(
        ours.requestsPerSec >= 0.8 * theirs.requestsPerSec ? 'PASS' : 'MISS',
        rpsLabel,
        `serve ${ours.requestsPerSec}/s vs supergateway ${theirs.requestsPerSec}/s: ${times(ours.requestsPerSec, theirs.requestsPerSec)}`,
      );
    } else {
      const reason = why(ours?.p50Us === undefined ? ours : theirs);
      add('SKIP', p50Label, reason);
      add('SKIP', rpsLabel, reason);
    }
    const bridge = fronts?.['serve --backend none'];
    const direct = fronts?.direct;
    const cpuLabel = `serve --backend none: bridge CPU per call ≤ direct server's, ${name}`;
    if (bridge?.processCpuUsPerCall !== undefined && direct?.processCpuUsPerCall !== undefined)
      add(
        bridge.processCpuUsPerCall <= direct.processCpuUsPerCall ? 'PASS' : 'MISS',
        cpuLabel,
        `bridge ${fmt(bridge.processCpuUsPerCall, 0)} µs vs direct ${fmt(direct.processCpuUsPerCall, 0)} µs: ${times(bridge.processCpuUsPerCall, direct.processCpuUsPerCall)}`,
      );
    else add('SKIP', cpuLabel, why(bridge?.processCpuUsPerCall === undefined ? bridge : direct));
  }
}
