// Adds up the vitest JSON reports of every package into one closing line for CI.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

let passed = 0;
let failed = 0;
let skipped = 0;
const missing = [];
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
  }
}
if (missing.length > 0)
  console.error(`no test report from: ${missing.join(', ')} (the run failed before its tests)`);
console.log(`${passed} passed, ${failed + missing.length} failed, ${skipped} skipped`);
process.exit(failed > 0 || missing.length > 0 ? 1 : 0);
