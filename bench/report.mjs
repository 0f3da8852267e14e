// Turns raw results into the markdown tables printed on stdout and the PASS/MISS target lines.
import { mb } from './lib/proc.mjs';
import { serveTables, serveTargets } from './lib/serve-report.mjs';
import { round } from './lib/stats.mjs';
import { uvxTables, uvxTargets } from './lib/uvx-report.mjs';

const dash = '—';

function table(headers, rows) {
  const lines = [
    `| ${headers.join(' | ')} |`,
    `|${headers.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`,
  ];
  for (const row of rows)
    lines.push(`| ${row.map((cell) => (cell === undefined ? dash : String(cell))).join(' | ')} |`);
  return lines.join('\n');
}

const times = (value, base) => (value === undefined || !base ? dash : `${(value / base).toFixed(2)}×`);
const plus = (value, base, unit) => {
  if (value === undefined || base === undefined) return dash;
  const d = value - base;
  return `${d >= 0 ? '+' : '−'}${Math.abs(round(d)).toLocaleString('en-US')} ${unit}`;
};
const fmt = (value, digits = 1) =>
  value === undefined ? undefined : round(value, digits).toLocaleString('en-US');

function skippedRow(name, reason, width) {
  return [name, `skipped: ${reason}`, ...Array(width - 2).fill('')];
}

export function renderTables(results) {
  const out = [];
  const { latency, throughput, bigMessage, coldStart, egress, memory, vmSandbox, skipped } = results;
  if (results.session) out.push(...sessionTable(results.session));
  if (results.npxFirst) out.push(...npxFirstTables(results.npxFirst));
  if (results.uvx) out.push(...uvxTables(results.uvx));
  const skipRows = (width, section) =>
    Object.entries(skipped)
      .filter(([name]) => section[name] === undefined)
      .map(([name, reason]) => skippedRow(name, reason, width));

  if (latency) {
    const base = latency.direct?.p50Us;
    const rows = Object.entries(latency).map(([name, r]) =>
      r.error
        ? skippedRow(name, r.error, 8)
        : [
            name,
            fmt(r.p50Us),
            fmt(r.p95Us),
            fmt(r.p99Us),
            fmt(r.meanUs),
            name === 'direct' ? dash : plus(r.p50Us, base, 'µs'),
            name === 'direct' ? '1.00×' : times(r.p50Us, base),
            fmt(r.processCpuUsPerCall, 0),
          ],
    );
    const calls = Object.values(latency).find((r) => r.calls)?.calls ?? 0;
    out.push(
      `### Round-trip latency: ${calls.toLocaleString('en-US')} sequential tools/call (echo), µs${results.settings?.keepCpusAwake ? ' — idle cores kept busy (--keep-cpus-awake)' : ''}`,
      '',
      table(
        ['target', 'p50', 'p95', 'p99', 'mean', 'p50 added vs direct', 'p50 vs direct', 'CPU µs/call ¹'],
        [...rows, ...skipRows(8, latency)],
      ),
      '',
    );
  }

  if (throughput) {
    const base = throughput.direct?.mbPerSec;
    const rows = Object.entries(throughput).map(([name, r]) =>
      r.error
        ? skippedRow(name, r.error, 5)
        : [
            name,
            fmt(r.mbPerSec),
            r.responses,
            base ? `${Math.round((r.mbPerSec / base) * 100)} %` : dash,
            fmt(r.processCpuMsPerMiB, 2),
          ],
    );
    const seconds = Object.values(throughput).find((r) => r.seconds)?.seconds;
    out.push(
      `### Throughput: 1 MiB results back-to-back for ${round(seconds, 0)} s (MB = 10⁶ bytes)`,
      '',
      table(
        ['target', 'MB/s', 'results', 'vs direct', 'CPU ms/MiB ¹'],
        [...rows, ...skipRows(5, throughput)],
      ),
      '',
    );
  }

  if (latency || throughput) {
    out.push(
      '¹ CPU time (user + system) of the bridge process per call or per MiB; for `direct`, of the server; for `fake`, of the bridge with the server inside it. Other load on the machine moves it far less than the wall-clock figures.',
      '',
    );
  }

  if (bigMessage) {
    const base = bigMessage.direct;
    const rows = Object.entries(bigMessage).map(([name, r]) =>
      r.error
        ? skippedRow(name, r.error, 7)
        : [
            name,
            fmt(r.toClient.ms, 0),
            times(r.toClient.ms, base?.toClient.ms),
            fmt(mb(r.toClient.bridgePeakKiB)),
            fmt(r.toServer.ms, 0),
            times(r.toServer.ms, base?.toServer.ms),
            fmt(mb(r.toServer.bridgePeakKiB)),
          ],
    );
    out.push(
      '### One 20 MB message each way (ms; bridge peak RSS = VmHWM, MiB)',
      '',
      table(
        [
          'target',
          'server→client ms',
          'vs direct',
          'bridge peak RSS',
          'client→server ms',
          'vs direct',
          'bridge peak RSS',
        ],
        [...rows, ...skipRows(7, bigMessage)],
      ),
      '',
    );
  }

  if (coldStart) {
    const rows = [];
    for (const [name, r] of Object.entries(coldStart)) {
      const baseKey = name.startsWith('npx ') ? 'npx direct' : 'direct';
      const base = coldStart[baseKey]?.medianMs;
      if (r.skipped) rows.push(skippedRow(name, r.skipped, 6));
      else
        rows.push([
          name,
          fmt(r.medianMs),
          `${fmt(r.minMs)}–${fmt(r.maxMs)}`,
          name === baseKey ? dash : plus(r.medianMs, base, 'ms'),
          name === baseKey ? '1.00×' : times(r.medianMs, base),
          `${r.samplesMs.length}${r.failures ? ` (${r.failures.length} failed)` : ''}`,
        ]);
    }
    const phaseRows = Object.entries(coldStart)
      .filter(([, r]) => r.phasesMs)
      .map(([name, r]) => [
        name,
        fmt(r.phasesMs.binaryStart, 0),
        fmt(r.phasesMs.createSandbox, 1),
        fmt(r.phasesMs.prepareAndExec, 1),
        fmt(r.phasesMs.serverToFirstReply, 1),
      ]);
    out.push(
      '### Cold start: spawn → first response (initialize), ms',
      '',
      table(['target', 'median', 'range', 'vs direct', 'ratio', 'runs'], rows),
      '',
    );
    if (phaseRows.length > 0)
      out.push(
        'Where a bridged start goes (median of 3 more starts with `--trace`, ms): the binary loading until the session starts, `create()` of the sandbox, `prepare()` and `exec()` of the command, the server until its first reply.',
        '',
        table(['target', 'binary start', 'create', 'prepare + exec', 'server → first reply'], phaseRows),
        '',
      );
  }

  if (memory) {
    const rows = [];
    const s = memory.steady;
    if (s?.error) rows.push(['steady', `error: ${s.error}`, '']);
    else if (s) {
      rows.push(['at start (after initialize)', fmt(mb(s.startKiB)), '']);
      for (const c of s.checkpoints)
        rows.push([
          `after ${c.roundTrips.toLocaleString('en-US')} round trips`,
          fmt(mb(c.rssKiB)),
          `${c.seconds} s`,
        ]);
      rows.push(['peak (VmHWM)', fmt(mb(s.peakKiB)), '']);
    }
    const p = memory.paused;
    if (p?.error) rows.push(['paused client', `error: ${p.error}`, '']);
    else if (p) {
      rows.push(['flood, client reading', fmt(mb(p.beforeKiB)), `${fmt(p.floodBytesPerSec / 1e6, 0)} MB/s`]);
      rows.push([
        `flood, client not reading for ${p.pauseSeconds} s (max)`,
        fmt(mb(p.maxDuringPauseKiB)),
        `${p.growthKiB >= 0 ? '+' : '−'}${fmt(Math.abs(mb(p.growthKiB)))} MiB`,
      ]);
    }
    out.push(
      `### Bridge memory (\`${memory.target}\`), RSS in MiB`,
      '',
      table(['when', 'RSS', 'note'], rows),
      '',
    );
  }

  if (results.serve) out.push(...serveTables(results.serve, results.settings?.serve));

  if (egress) {
    out.push('### Egress: one HTTPS request on a new connection, inside `local`, ms (median)', '');
    if (egress.skipped) out.push(`skipped: ${egress.skipped}`, '');
    else
      out.push(
        table(
          ['path', 'median', 'rounds'],
          [
            [
              'transparent (DNS responder + :443 listener)',
              fmt(egress.transparentMs, 2),
              String(egress.rounds),
            ],
            ['proxy (CONNECT)', fmt(egress.connectMs, 2), String(egress.rounds)],
            ['added by transparent', plus(egress.transparentMs, egress.connectMs, 'ms'), ''],
          ],
        ),
        '',
      );
    const secret = egress.secret;
    if (secret?.skipped) out.push(`--secret: skipped: ${secret.skipped}`, '');
    else if (secret)
      out.push(
        '`--secret`: the same request (transparent path) to a bound name, whose TLS ends on the host, ms (median)',
        '',
        table(
          ['request', 'ms', 'rounds'],
          [
            [
              "a client process's first request, to the bound name",
              fmt(secret.firstBoundMs, 2),
              `${secret.firstBoundSamplesMs?.length ?? 1} sessions`,
            ],
            [
              "a client process's first request, to the unbound name",
              fmt(secret.firstUnboundMs, 2),
              `${secret.firstUnboundSamplesMs?.length ?? 0} sessions`,
            ],
            ['bound name, new connection', fmt(secret.boundMs, 2), String(secret.rounds)],
            ['granted name not bound, new connection', fmt(secret.unboundMs, 2), String(secret.rounds)],
            ['added by the substitution', plus(secret.boundMs, secret.unboundMs, 'ms'), ''],
          ],
        ),
        '',
      );
  }

  if (vmSandbox) {
    out.push('### vm-sandbox (its own bench)', '');
    if (vmSandbox.skipped) out.push(`skipped: ${vmSandbox.skipped}`, '');
    // A line of text right before a table would swallow it: keep them apart.
    else out.push(vmSandbox.output.replace(/^([^|\n].*)\n\|/m, '$1\n\n|'), '');
  }
  return out.join('\n');
}

function sessionTable(session) {
  const bare = session.bare?.medianMs;
  const direct = session.direct?.medianMs;
  const rows = Object.entries(session).map(([name, r]) => {
    if (r.notAvailable) return [name, `n/a (${r.notAvailable})`, '', '', '', ''];
    if (r.skipped) return skippedRow(name, r.skipped, 6);
    const isSession = !['bare', '--version'].includes(name);
    return [
      name,
      fmt(r.medianMs),
      `${fmt(r.minMs)}–${fmt(r.maxMs)}`,
      times(r.medianMs, bare),
      isSession && name !== 'direct' ? plus(r.medianMs, direct, 'ms') : dash,
      isSession && name !== 'direct' && direct !== undefined ? times(r.medianMs - direct, bare) : dash,
    ];
  });
  return [
    '### Whole session, smallest server: spawn → initialize answered → stdin closed → exit, ms',
    '',
    '`bare` is `node -e` printing one line (the floor for any bridge written for Node); `--version` is the installed binary; every other row is a session with the fake server, run by run interleaved.',
    '',
    table(['target', 'median', 'range', 'vs bare', 'added vs direct', 'added ÷ bare'], rows),
    '',
  ];
}

function npxFirstTables(npx) {
  if (npx.skipped) return ['### npx first start', '', `skipped: ${npx.skipped}`, ''];
  const section = (title, entries) => {
    const base = entries.direct?.medianMs;
    const rows = Object.entries(entries).map(([name, r]) =>
      r.skipped
        ? skippedRow(name, r.skipped, 4)
        : [name, fmt(r.medianMs), name === 'direct' ? '1.00×' : times(r.medianMs, base), r.samplesMs.length],
    );
    return [title, '', table(['target', 'median', 'vs direct', 'runs'], rows), ''];
  };
  return [
    ...section(
      '### npx first start, the npm cache already holds the package (spawn → first response, ms)',
      npx.cached,
    ),
    ...(npx.fresh
      ? section(
          '### npx first start, the package installed nowhere (new npm cache each run; spawn → first response, ms)',
          npx.fresh,
        )
      : []),
  ];
}

/** The session, --version, npx first/warm start and srt targets. */
function startTargets(results, add) {
  const s = results.session;
  const med = (name) => s?.[name]?.medianMs;
  const why = (name) =>
    s?.[name]?.notAvailable ?? s?.[name]?.skipped ?? (s ? 'not measured' : 'session not measured');
  const bare = med('bare');
  const direct = med('direct');
  for (const [name, factor] of [
    ['local', 1.3],
    ['none', 1.1],
  ]) {
    const label = `session: ${name} − direct ≤ ${factor} × bare`;
    if ([bare, direct, med(name)].some((v) => v === undefined))
      add('SKIP', label, why(med(name) === undefined ? name : 'bare'));
    else {
      const added = med(name) - direct;
      add(
        added <= factor * bare ? 'PASS' : 'MISS',
        label,
        `${name} ${med(name)} ms − direct ${direct} ms = ${round(added)} ms vs ${factor} × bare ${bare} ms = ${round(factor * bare)} ms (${round(added / bare, 2)}×)`,
      );
    }
  }
  if (med('local') !== undefined && med('srt') !== undefined)
    add(
      med('local') <= 0.5 * med('srt') ? 'PASS' : 'MISS',
      'session: local ≤ 0.5 × srt',
      `local ${med('local')} ms vs srt ${med('srt')} ms: ${round(med('local') / med('srt'), 2)}×`,
    );
  else add('SKIP', 'session: local ≤ 0.5 × srt', why(med('srt') === undefined ? 'srt' : 'local'));
  if (med('run --backend srt') !== undefined && med('srt') !== undefined)
    add(
      'INFO',
      'session: run --backend srt beside srt',
      `run --backend srt ${med('run --backend srt')} ms vs srt ${med('srt')} ms: ${round(med('run --backend srt') / med('srt'), 2)}×`,
    );
  else add('N/A', 'session: run --backend srt beside srt', `n/a (${why('run --backend srt')})`);
  if (med('--version') !== undefined && bare !== undefined)
    add(
      med('--version') <= 1.2 * bare ? 'PASS' : 'MISS',
      'mcp-sandbox --version ≤ 1.2 × bare node',
      `--version ${med('--version')} ms vs bare ${bare} ms: ${round(med('--version') / bare, 2)}×`,
    );
  else add('SKIP', 'mcp-sandbox --version ≤ 1.2 × bare node', why('--version'));

  const npx = results.npxFirst;
  for (const [key, factor, label] of [
    ['cached', 1.3, 'npx first start, npm cache holds it: sandboxed ≤ 1.3 × direct'],
    ['fresh', 1.2, "npx first start, installed nowhere: sandboxed ≤ 1.2 × direct npx's own"],
  ]) {
    const entries = npx?.[key];
    const base = entries?.direct?.medianMs;
    const local = entries?.local?.medianMs;
    if (base === undefined || local === undefined)
      add(
        'SKIP',
        label,
        npx?.skipped ?? entries?.local?.skipped ?? entries?.direct?.skipped ?? 'npx-first not measured',
      );
    else
      add(
        local <= factor * base ? 'PASS' : 'MISS',
        label,
        `local ${local} ms vs direct ${base} ms: ${round(local / base, 2)}×${npx.asRoot ? " (as root: installs run as another uid, root's npm cache seeds the install's own)" : ''}`,
      );
  }
  const warmDirect = results.coldStart?.['npx direct']?.medianMs;
  const warmLocal = results.coldStart?.['npx local']?.medianMs;
  if (warmDirect !== undefined && warmLocal !== undefined)
    add(
      warmLocal <= 1.1 * warmDirect ? 'PASS' : 'MISS',
      'npx warm start: local ≤ direct + 10 %',
      `npx local ${warmLocal} ms vs npx direct ${warmDirect} ms: +${round((warmLocal / warmDirect - 1) * 100)} %`,
    );
  else add('SKIP', 'npx warm start: local ≤ direct + 10 %', 'npx cold start not measured');
}

const MIB = 1024;

/**
 * `--secret`: the first request to a bound host adds at most one TLS handshake on the host. Both
 * firsts are a fresh client process's first request (which loads its trust store either way); the
 * one handshake is the substitution's added cost on a later new connection, measured alone.
 */
function secretTargets(secret, add) {
  const name = '--secret: first bound request ≤ first unbound + one host TLS handshake';
  if (!secret || secret.skipped || secret.firstUnboundMs === undefined) {
    add('SKIP', name, secret?.skipped ?? 'egress not measured');
    return;
  }
  const handshake = Math.max(secret.addedMs, 0);
  add(
    secret.firstBoundMs <= secret.firstUnboundMs + handshake ? 'PASS' : 'MISS',
    name,
    `first bound ${secret.firstBoundMs} ms vs first unbound ${secret.firstUnboundMs} + ${handshake} ms (medians of ${secret.firstBoundSamplesMs.length} and ${secret.firstUnboundSamplesMs.length} sessions)`,
  );
}

/** PASS/MISS (or SKIP) for each target of the issue. Never fails the run. */
export function checkTargets(results) {
  const lines = [];
  const add = (status, name, detail) => lines.push({ status, name, detail });
  const { latency, throughput, coldStart, memory } = results;
  startTargets(results, add);
  uvxTargets(results.uvx, add);

  const direct = latency?.direct?.p50Us;
  const bridged = latency?.none?.p50Us;
  if (direct !== undefined && bridged !== undefined)
    add(
      bridged <= direct + 50 ? 'PASS' : 'MISS',
      'bridge p50 ≤ direct + 50 µs',
      `none ${bridged} µs vs direct ${direct} µs: +${round(bridged - direct)} µs`,
    );
  else add('SKIP', 'bridge p50 ≤ direct + 50 µs', 'latency not measured');

  const tDirect = throughput?.direct?.mbPerSec;
  const tBridge = throughput?.none?.mbPerSec;
  if (tDirect && tBridge !== undefined)
    add(
      tBridge >= 0.9 * tDirect ? 'PASS' : 'MISS',
      '1 MiB throughput ≥ 90 % of direct',
      `none ${tBridge} MB/s vs direct ${tDirect} MB/s: ${Math.round((tBridge / tDirect) * 100)} %`,
    );
  else add('SKIP', '1 MiB throughput ≥ 90 % of direct', 'throughput not measured');

  const local = coldStart?.local;
  const bare = coldStart?.none;
  if (local?.medianMs !== undefined && bare?.medianMs !== undefined)
    add(
      local.medianMs <= bare.medianMs + 15 ? 'PASS' : 'MISS',
      'local cold start ≤ bare (none) + 15 ms',
      `local ${local.medianMs} ms vs none ${bare.medianMs} ms: +${round(local.medianMs - bare.medianMs)} ms`,
    );
  else
    add(
      'SKIP',
      'local cold start ≤ bare (none) + 15 ms',
      local?.skipped ?? results.skipped.local ?? 'cold start not measured',
    );

  secretTargets(results.egress?.secret, add);

  const steady = memory?.steady;
  if (steady && !steady.error) {
    const readings = [steady.startKiB, ...steady.checkpoints.map((c) => c.rssKiB)];
    const max = Math.max(...readings);
    add(
      max <= 60 * MIB ? 'PASS' : 'MISS',
      'bridge RSS ≤ 60 MB',
      `max ${mb(max)} MiB over start, ${steady.checkpoints.map((c) => c.roundTrips.toLocaleString('en-US')).join(', ')} round trips`,
    );
    const at10k = steady.checkpoints.find((c) => c.roundTrips === 10_000)?.rssKiB;
    const at100k = steady.checkpoints.find((c) => c.roundTrips === 100_000)?.rssKiB;
    if (at10k && at100k) {
      const change = (at100k - at10k) / at10k;
      add(
        Math.abs(change) <= 0.05 ? 'PASS' : 'MISS',
        'bridge RSS within ±5 % between 10k and 100k',
        `${mb(at10k)} → ${mb(at100k)} MiB: ${change >= 0 ? '+' : ''}${round(change * 100)} %`,
      );
    } else add('SKIP', 'bridge RSS within ±5 % between 10k and 100k', 'quick run: fewer round trips');
  } else add('SKIP', 'bridge RSS ≤ 60 MB', steady?.error ?? 'memory not measured');

  const paused = memory?.paused;
  if (paused && !paused.error)
    add(
      paused.growthKiB <= 4 * MIB ? 'PASS' : 'MISS',
      'bounded while the client stops reading (RSS growth ≤ 4 MiB)',
      `${mb(paused.beforeKiB)} → max ${mb(paused.maxDuringPauseKiB)} MiB over ${paused.pauseSeconds} s`,
    );
  if (results.serve) serveTargets(results.serve, add);
  return lines;
}

export function renderTargets(lines) {
  return lines.map((l) => `${l.status} ${l.name}: ${l.detail}`).join('\n');
}
