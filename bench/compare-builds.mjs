#!/usr/bin/env node
// Before/after in one run: whole sessions (spawn → `initialize` answered → EOF → exit) of this
// build and of another checkout's build, interleaved run by run, beside bare `node -e` and the
// server started directly. For a change's note: "no cost above the noise" needs both sides
// measured under the same load.
//   node bench/compare-builds.mjs --base <other checkout> [--runs 15] [--backends none,local]
import { existsSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { BIN, fakeServerBin } from './lib/env.mjs';
import { shebangNodeOptions } from './lib/targets.mjs';
import { measureSessions } from './suites/session.mjs';

const { values: flags } = parseArgs({
  options: {
    base: { type: 'string' },
    runs: { type: 'string', default: '15' },
    backends: { type: 'string', default: 'none,local' },
  },
});
if (!flags.base) {
  process.stderr.write(
    'usage: node bench/compare-builds.mjs --base <checkout> [--runs N] [--backends a,b]\n',
  );
  process.exit(2);
}
const baseBin = join(resolve(flags.base), 'apps', 'cli', 'dist', 'bin.js');
if (!existsSync(baseBin)) {
  process.stderr.write(`${baseBin} does not exist: build that checkout first\n`);
  process.exit(2);
}

const server = [process.execPath, await fakeServerBin()];
// Each build runs with the node options its own `#!` line names, as it runs once installed.
const node = (bin) => [process.execPath, ...shebangNodeOptions(bin), bin];
const cases = [
  { key: 'bare', argv: [process.execPath, '-e', 'console.log(1)'], exits: true },
  { key: 'direct', argv: server },
  { key: 'version (base)', argv: [...node(baseBin), '--version'], exits: true },
  { key: 'version (this)', argv: [...node(BIN), '--version'], exits: true },
];
for (const backend of flags.backends.split(',')) {
  for (const [side, bin] of [
    ['base', baseBin],
    ['this', BIN],
  ]) {
    cases.push({
      key: `${backend} (${side})`,
      argv: [...node(bin), 'run', '--backend', backend, '--', ...server],
    });
  }
}

const load = os.loadavg()[0].toFixed(2);
const results = await measureSessions(cases, { runs: Number(flags.runs) });
const bare = results.bare?.medianMs;
const direct = results.direct?.medianMs;
process.stdout.write(
  `load average at start ${load}, ${os.cpus().length} cores, ${flags.runs} interleaved runs\n\n`,
);
process.stdout.write('| case | median ms | min | max | − direct, × bare |\n|---|---:|---:|---:|---:|\n');
for (const c of cases) {
  const r = results[c.key];
  if (!r?.medianMs) {
    process.stdout.write(`| ${c.key} | ${r?.skipped ?? r?.notAvailable ?? 'n/a'} | | | |\n`);
    continue;
  }
  const over = c.exits ? r.medianMs / bare : (r.medianMs - direct) / bare;
  const label = c.exits ? `${over.toFixed(2)}× bare` : `${over.toFixed(2)}×`;
  process.stdout.write(
    `| ${c.key} | ${r.medianMs} | ${r.minMs} | ${r.maxMs} | ${c.key === 'direct' || c.key === 'bare' ? '' : label} |\n`,
  );
}
process.stdout.write(`\nload average at end ${os.loadavg()[0].toFixed(2)}\n`);
