// Starts of a `uvx` server from PyPI (spawn → answer to `initialize`), direct `uvx` and sandboxed,
// interleaved: (1) first starts, installed nowhere (a new, empty uv cache for direct uvx; a new,
// empty install cache and pin lock for the sandbox, which resolves, pins and installs in its own
// step); (2) warm starts (both caches filled by the first start of the round before).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { median, round } from '../lib/stats.mjs';
import { timeToInitialize } from '../lib/targets.mjs';
import { uvPath } from '../lib/uv-path.mjs';

export const UVX_PACKAGE = 'mcp-server-time==2026.10.19';

/**
 * `targets`: { direct, local } (local may be undefined). Returns `{ first: {direct, local},
 * warm: {direct, local} }`, each `{ samplesMs, medianMs }` or `{ skipped }`.
 */
export async function measureUvxStarts(
  targets,
  { firstRuns, warmRuns, timeoutMs = 180_000, deadlineMs = Number.POSITIVE_INFINITY },
) {
  const server = ['uvx', UVX_PACKAGE];
  const scratch = mkdtempSync(join(os.tmpdir(), 'mcpsandbox-bench-uvx-'));
  const PATH = uvPath();
  // Each target's caches: direct uvx's uv cache; the sandbox's install cache and pin lock.
  const envFor = (dir) => ({
    ...process.env,
    PATH,
    UV_PYTHON_DOWNLOADS: 'never',
    UV_CACHE_DIR: join(dir, 'uv-cache'),
    XDG_CACHE_HOME: join(dir, 'cache'),
    XDG_STATE_HOME: join(dir, 'state'),
    MCP_SANDBOX_PIN_LOCK: join(dir, 'pins.json'),
  });
  const all = [['direct', targets.direct], ...(targets.local ? [['local', targets.local]] : [])];
  const out = { package: UVX_PACKAGE, first: {}, warm: {} };
  for (const [name] of all) {
    out.first[name] = { samplesMs: [] };
    out.warm[name] = { samplesMs: [] };
  }
  const record = async (section, name, run) => {
    const entry = out[section][name];
    try {
      entry.samplesMs.push(round(await run(), 1));
    } catch (error) {
      entry.failures = [...(entry.failures ?? []), error.message];
    }
  };
  try {
    for (let i = 0; i < firstRuns; i++) {
      if (i > 0 && Date.now() > deadlineMs) {
        out.stoppedAfterRounds = i;
        break;
      }
      const dirs = {};
      for (const [name, target] of all) {
        dirs[name] = mkdtempSync(join(scratch, `${name}-`));
        const env = envFor(dirs[name]);
        await record('first', name, () =>
          timeToInitialize(target.argv(server), { env, cwd: scratch, timeoutMs }),
        );
      }
      // Warm starts with the caches this round's first starts filled.
      for (let w = 0; w < warmRuns; w++)
        for (const [name, target] of all) {
          const env = envFor(dirs[name]);
          await record('warm', name, () =>
            timeToInitialize(target.argv(server), { env, cwd: scratch, timeoutMs }),
          );
        }
      for (const dir of Object.values(dirs)) rmSync(dir, { recursive: true, force: true });
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  for (const section of [out.first, out.warm])
    for (const [name, entry] of Object.entries(section)) {
      if (entry.samplesMs.length === 0) section[name] = { skipped: entry.failures?.at(-1) ?? 'no start' };
      else entry.medianMs = round(median(entry.samplesMs), 1);
    }
  return out;
}
