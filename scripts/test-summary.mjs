// Adds up the vitest JSON reports of every package into one closing line for CI. Each failed test
// is named just above that line, with the first line of its failure: CI keeps only the tail.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

let passed = 0;
let failed = 0;
let skipped = 0;
const missing = [];
const failures = [];

function firstLine(text) {
  const line =
    String(text ?? '')
      .split('\n')
      .find((l) => l.trim() !== '') ?? '';
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}

function collectFailures(report) {
  for (const file of report.testResults ?? []) {
    const where = relative(process.cwd(), file.name);
    const failedTests = (file.assertionResults ?? []).filter((t) => t.status === 'failed');
    for (const t of failedTests)
      failures.push(`${where} > ${t.fullName}: ${firstLine(t.failureMessages?.[0])}`);
    // A file that failed to load has no failed test of its own, only its message.
    if (file.status === 'failed' && failedTests.length === 0) {
      failures.push(`${where}: ${firstLine(file.message)}`);
      failed += 1;
    }
  }
}

for (const root of ['packages', 'apps']) {
  for (const name of readdirSync(root)) {
    const dir = join(root, name);
    const pkg = join(dir, 'package.json');
    if (!existsSync(pkg) || !JSON.parse(readFileSync(pkg, 'utf8')).scripts?.test) continue;
    const report = join(dir, 'test-results.json');
    if (!existsSync(report)) {
      missing.push(dir);
      continue;
    }
    const r = JSON.parse(readFileSync(report, 'utf8'));
    passed += r.numPassedTests;
    failed += r.numFailedTests;
    skipped += r.numPendingTests + r.numTodoTests;
    collectFailures(r);
  }
}
if (missing.length > 0)
  console.error(`no test report from: ${missing.join(', ')} (the run failed before its tests)`);
for (const f of failures) console.log(`FAILED ${f}`);
console.log(`${passed} passed, ${failed + missing.length} failed, ${skipped} skipped`);
process.exit(failed > 0 || missing.length > 0 ? 1 : 0);
