// Benchmark: sandbox creation and the cost of one call through an exposed function, for the
// naive in-process design (the floor), the hardened in-process sandbox and the hardened child
// process. Run after a build: `node bench/vm-sandbox.bench.mjs`. Prints a table to stdout.
import { readFile } from 'node:fs/promises';
import * as vm from 'node:vm';
import { MCPAppSandbox } from '../dist/index.js';

const CREATE_RUNS = Number(process.env.BENCH_CREATE_RUNS ?? 20);
const CALLS = Number(process.env.BENCH_CALLS ?? 2000);

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};

function naiveCreate() {
  const started = performance.now();
  const context = vm.createContext({ console: { log() {} }, hostFn: (x) => x + 1 });
  vm.runInContext('1 + 1', context, { timeout: 2000 });
  return performance.now() - started;
}

function naiveCall() {
  const context = vm.createContext({ hostFn: (x) => x + 1 });
  const started = performance.now();
  vm.runInContext(`let s = 0; for (let i = 0; i < ${CALLS}; i++) s = hostFn(s);`, context, {
    timeout: 10_000,
  });
  return ((performance.now() - started) * 1000) / CALLS;
}

async function hardenedCreate(isolation) {
  let rss = 0;
  const started = performance.now();
  const sandbox = new MCPAppSandbox({
    isolation,
    code: isolation === 'process' ? 'await probe();' : '1 + 1;',
  });
  if (isolation === 'process') {
    // Resident size of the idle child, read by the host from /proc while the app waits on it.
    sandbox.expose('probe', async () => {
      rss = await childRss();
    });
  }
  await sandbox.run();
  const ms = performance.now() - started;
  await sandbox.dispose();
  return { ms, rss };
}

async function childRss() {
  const { execFileSync } = await import('node:child_process');
  const pids = execFileSync('pgrep', ['-P', String(process.pid)])
    .toString()
    .trim()
    .split('\n');
  let rss = 0;
  for (const pid of pids) {
    try {
      const status = await readFile(`/proc/${pid}/status`, 'utf8');
      const match = /VmRSS:\s+(\d+)/.exec(status);
      if (match) rss = Math.max(rss, Number(match[1]) / 1024);
    } catch {}
  }
  return rss;
}

async function hardenedCall(isolation) {
  let started = 0;
  let ended = 0;
  const sandbox = new MCPAppSandbox({
    isolation,
    timeout: 10_000,
    code: `await mark(); let s = 0; for (let i = 0; i < ${CALLS}; i++) s = await hostFn(s); await mark();`,
  });
  sandbox.expose('hostFn', (x) => x + 1);
  let marks = 0;
  sandbox.expose('mark', () => {
    if (marks++ === 0) started = performance.now();
    else ended = performance.now();
  });
  await sandbox.run();
  await sandbox.dispose();
  return ((ended - started) * 1000) / CALLS;
}

const rows = [];
{
  for (let i = 0; i < 5; i++) naiveCreate();
  const create = median(Array.from({ length: CREATE_RUNS }, naiveCreate));
  const call = median(Array.from({ length: 5 }, naiveCall));
  rows.push(['naive in-process (floor, unsafe)', create, call, '-']);
}
for (const isolation of ['in-process-trusted', 'process']) {
  await hardenedCreate(isolation);
  const creates = [];
  const rss = [];
  for (let i = 0; i < CREATE_RUNS; i++) {
    const result = await hardenedCreate(isolation);
    creates.push(result.ms);
    rss.push(result.rss);
  }
  const calls = [];
  for (let i = 0; i < 3; i++) calls.push(await hardenedCall(isolation));
  rows.push([
    `hardened ${isolation}`,
    median(creates),
    median(calls),
    isolation === 'process' ? `${median(rss).toFixed(0)} MB` : '-',
  ]);
}

const header = ['design', 'create+run (ms)', 'call (µs)', 'child RSS'];
const table = [
  header,
  ...rows.map(([name, create, call, rss]) => [name, create.toFixed(2), call.toFixed(1), rss]),
];
const widths = header.map((_, i) => Math.max(...table.map((row) => String(row[i]).length)));
const line = (row) => `| ${row.map((cell, i) => String(cell).padEnd(widths[i])).join(' | ')} |`;
console.log(`Node ${process.version}, ${CREATE_RUNS} creations, ${CALLS} calls (medians)`);
console.log(line(header));
console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
for (const row of table.slice(1)) console.log(line(row));
