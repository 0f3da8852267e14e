// Whole sessions, interleaved run by run: spawn → `initialize` answered → stdin closed → exit,
// beside "bare" (the start of `node -e` that prints one line, the floor for any bridge written for
// Node) and `mcp-sandbox --version`. A case is either a session (`argv` serves MCP) or a program
// that prints and exits (`exits: true`).
import { spawn } from 'node:child_process';
import { initializeRequest, RawClient } from '../lib/client.mjs';
import { median, round } from '../lib/stats.mjs';
import { withTimeout } from '../lib/targets.mjs';

async function oneSession(argv, timeoutMs) {
  const client = new RawClient(argv);
  try {
    await withTimeout(
      Promise.race([
        client.call(0, initializeRequest(0)),
        client.exited.then((s) => {
          throw new Error(`exited (code ${s.code}, signal ${s.signal}) before answering`);
        }),
      ]),
      timeoutMs,
      'initialize',
    );
    const status = await client.close(timeoutMs);
    if (status.signal === 'SIGKILL') throw new Error(`did not exit within ${timeoutMs} ms of stdin closing`);
    return Number(process.hrtime.bigint() - client.spawnedAt) / 1e6;
  } catch (error) {
    await client.kill();
    const tail = client.stderrTail.trim().split('\n').slice(-2).join(' / ');
    throw new Error(`${error.message}${tail ? `: ${tail}` : ''}`);
  }
}

function oneProgram(argv, timeoutMs) {
  return new Promise((resolve, reject) => {
    const [file, ...args] = argv;
    const started = process.hrtime.bigint();
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      if (code === 0 && out.trim().split('\n').length === 1) resolve(ms);
      else reject(new Error(`exited ${code ?? signal} printing ${JSON.stringify(out.slice(0, 80))}`));
    });
  });
}

/**
 * `cases`: [{ key, argv, exits?, notAvailable? }]. One untimed run each (a case that fails is
 * reported with its error), then `runs` interleaved timed runs.
 */
export async function measureSessions(cases, { runs, timeoutMs = 30_000 }) {
  const results = {};
  const live = [];
  const once = (c) => (c.exits ? oneProgram(c.argv, timeoutMs) : oneSession(c.argv, timeoutMs));
  for (const c of cases) {
    if (c.notAvailable) {
      results[c.key] = { notAvailable: c.notAvailable };
      continue;
    }
    try {
      await once(c);
      live.push(c);
      results[c.key] = { samplesMs: [] };
    } catch (error) {
      results[c.key] = { skipped: error.message };
    }
  }
  for (let i = 0; i < runs; i++) {
    for (const c of live) {
      try {
        results[c.key].samplesMs.push(round(await once(c), 2));
      } catch (error) {
        results[c.key].failures = [...(results[c.key].failures ?? []), error.message];
      }
    }
  }
  for (const c of live) {
    const entry = results[c.key];
    if (entry.samplesMs.length === 0) {
      results[c.key] = { skipped: entry.failures?.at(-1) ?? 'no run succeeded' };
      continue;
    }
    entry.medianMs = round(median(entry.samplesMs), 2);
    entry.minMs = Math.min(...entry.samplesMs);
    entry.maxMs = Math.max(...entry.samplesMs);
  }
  return results;
}
