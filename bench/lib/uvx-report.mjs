// The `uvx` rows of `pnpm bench`: first and warm starts of a PyPI server, direct and sandboxed.
import { round } from './stats.mjs';

const fmt = (value) => (value === undefined ? '—' : round(value, 1).toLocaleString('en-US'));

export function uvxTables(uvx) {
  if (uvx.skipped) return ['### uvx starts', '', `skipped: ${uvx.skipped}`, ''];
  const section = (title, entries) => {
    const base = entries.direct?.medianMs;
    const lines = ['| target | median | vs direct | runs |', '|---|---:|---:|---:|'];
    for (const [name, r] of Object.entries(entries)) {
      if (r.skipped) lines.push(`| ${name} | skipped: ${r.skipped} | | |`);
      else {
        const ratio = name === 'direct' ? '1.00×' : base ? `${(r.medianMs / base).toFixed(2)}×` : '—';
        lines.push(`| ${name} | ${fmt(r.medianMs)} | ${ratio} | ${r.samplesMs.length} |`);
      }
    }
    return [title, '', ...lines, ''];
  };
  return [
    ...section(
      `### uvx first start, \`${uvx.package}\` installed nowhere (new uv cache / install cache each run; spawn → first response, ms)`,
      uvx.first,
    ),
    ...section(`### uvx warm start, \`${uvx.package}\` (spawn → first response, ms)`, uvx.warm),
  ];
}

/** warm ≤ direct uvx + 10 %; first ≤ 1.2 × direct uvx. */
export function uvxTargets(uvx, add) {
  for (const [key, factor, label] of [
    ['warm', 1.1, 'uvx warm start: local ≤ direct uvx + 10 %'],
    ['first', 1.2, 'uvx first start, installed nowhere: local ≤ 1.2 × direct uvx'],
  ]) {
    const base = uvx?.[key]?.direct?.medianMs;
    const local = uvx?.[key]?.local?.medianMs;
    if (base === undefined || local === undefined)
      add(
        'SKIP',
        label,
        uvx?.skipped ?? uvx?.[key]?.local?.skipped ?? uvx?.[key]?.direct?.skipped ?? 'uvx not measured',
      );
    else
      add(
        local <= factor * base ? 'PASS' : 'MISS',
        label,
        `local ${local} ms vs direct uvx ${base} ms: ${round(local / base, 2)}×`,
      );
  }
}
