// Summarises V8 CPU profiles (from `node scripts/bench.mjs --cpu-prof dir`): the functions with
// the most self time, and the most inclusive time, across every profile given.
//   node bench/profile-summary.mjs dir-or-files... [--top 25]
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '25' } },
});
const top = Number(values.top);
const files = positionals.flatMap((p) =>
  statSync(p).isDirectory()
    ? readdirSync(p)
        .filter((f) => f.endsWith('.cpuprofile'))
        .map((f) => join(p, f))
    : [p],
);

const self = new Map();
const total = new Map();
let allUs = 0;
for (const file of files) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const hits = new Map();
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = profile.timeDeltas[i + 1] ?? profile.timeDeltas[i] ?? 0;
    hits.set(profile.samples[i], (hits.get(profile.samples[i]) ?? 0) + dt);
  }
  const label = (n) => {
    const f = n.callFrame;
    const where = f.url ? `${relative(process.cwd(), f.url.replace('file://', ''))}:${f.lineNumber + 1}` : '';
    return `${f.functionName || '(anonymous)'} ${where}`.trim();
  };
  for (const [id, us] of hits) {
    allUs += us;
    const n = byId.get(id);
    self.set(label(n), (self.get(label(n)) ?? 0) + us);
    const seen = new Set();
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const l = label(byId.get(cur));
      if (seen.has(l)) continue;
      seen.add(l);
      total.set(l, (total.get(l) ?? 0) + us);
    }
  }
}

const show = (title, map) => {
  console.log(`\n${title} (${files.length} profile(s), ${(allUs / 1e6).toFixed(2)} s sampled)`);
  for (const [l, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(
      `${((us / allUs) * 100).toFixed(1).padStart(5)} %  ${(us / 1000).toFixed(0).padStart(7)} ms  ${l}`,
    );
};
show('self time', self);
show('inclusive time', total);
