// First starts of an `npx -y` server (spawn → answer to `initialize`), direct and sandboxed,
// interleaved: (1) the npm cache already holds the package (a cache this suite prepares; npx's own
// install directory is removed after each run, the sandbox's install cache is new each run);
// (2) the package installed nowhere (a new, empty npm cache and sandbox cache each run). Both
// reach only the npm registry. After each start what it installed is removed and the disk is let
// settle, so every start begins on a quiet disk. The warm start is the cold-start suite's `npx` rows.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { median, round } from '../lib/stats.mjs';
import { timeToInitialize } from '../lib/targets.mjs';

/** Waits until what the disk was given is written (deletions included): each start begins on a quiet disk. */
function settle() {
  spawnSync('sync', { stdio: 'ignore' });
}

/**
 * `targets`: { direct, sandboxed: [[name, target]] }; `server`: the npx argv; `runs` rounds of the
 * cached starts, the first `freshRuns` of them with the installed-nowhere starts too. Returns
 * `{ cached: { direct, <name>… }, fresh: { … } }`, each `{ samplesMs, medianMs }` or `{ skipped }`.
 */
export async function measureNpxFirstStarts(
  targets,
  server,
  { runs, freshRuns = runs, timeoutMs = 180_000, cwd, deadlineMs = Number.POSITIVE_INFINITY },
) {
  const scratch = mkdtempSync(join(os.tmpdir(), 'mcpsandbox-bench-npx-first-'));
  const heldCache = join(scratch, 'npm-cache');
  const envWith = (npmCache, sandboxCache) => ({
    ...process.env,
    npm_config_cache: npmCache,
    // The sandbox's own install cache and pin lock: new, so each start is a first start.
    XDG_CACHE_HOME: sandboxCache,
    XDG_STATE_HOME: sandboxCache,
  });
  const all = [['direct', targets.direct], ...targets.sandboxed];
  const out = { cached: {}, fresh: {}, asRoot: process.getuid?.() === 0 };
  for (const [name] of all) {
    out.cached[name] = { samplesMs: [] };
    out.fresh[name] = { samplesMs: [] };
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
    // The cache the user already has: one direct start fills it (untimed).
    await timeToInitialize(targets.direct.argv(server), {
      cwd,
      env: envWith(heldCache, mkdtempSync(join(scratch, 'x-'))),
      timeoutMs,
    });
    rmSync(join(heldCache, '_npx'), { recursive: true, force: true });
    settle();
    for (let i = 0; i < runs; i++) {
      // Registry downloads are slow on a busy machine: later rounds give way to the bench's budget.
      if (i > 0 && Date.now() > deadlineMs) {
        out.stoppedAfterRounds = i;
        break;
      }
      for (const [name, target] of all) {
        const sandboxCache = mkdtempSync(join(scratch, 'sandbox-'));
        await record('cached', name, () =>
          timeToInitialize(target.argv(server), { cwd, env: envWith(heldCache, sandboxCache), timeoutMs }),
        );
        // What this start installed goes now, and the disk settles: one start's cleanup must not
        // run in the next one's timed window (before, direct npx's tree was removed just as the
        // sandboxed start began, and its deletion was charged to the sandbox).
        rmSync(join(heldCache, '_npx'), { recursive: true, force: true });
        rmSync(sandboxCache, { recursive: true, force: true });
        settle();
      }
      // Installed nowhere: minutes of downloads a run, so fewer rounds of it.
      for (const [name, target] of i < freshRuns ? all : []) {
        const fresh = mkdtempSync(join(scratch, 'fresh-'));
        await record('fresh', name, () =>
          timeToInitialize(target.argv(server), {
            cwd,
            env: envWith(join(fresh, 'npm-cache'), join(fresh, 'sandbox')),
            timeoutMs,
          }),
        );
        rmSync(fresh, { recursive: true, force: true });
        settle();
      }
    }
  } catch (error) {
    return { skipped: `could not fill the npm cache: ${error.message}` };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  if (freshRuns === 0) delete out.fresh;
  for (const section of [out.cached, out.fresh ?? {}])
    for (const [name, entry] of Object.entries(section)) {
      if (entry.samplesMs.length === 0) section[name] = { skipped: entry.failures?.at(-1) ?? 'no start' };
      else entry.medianMs = round(median(entry.samplesMs), 1);
    }
  return out;
}
