// vm-sandbox's own bench (MCPAppSandbox creation time and exposed-call overhead per isolation
// mode) lives with the package; this runs it and keeps what it prints.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../lib/env.mjs';

const PACKAGE_DIR = join(ROOT, 'packages', 'vm-sandbox');

/** The file its package.json `bench` script runs, if the package has one. */
function benchScript() {
  try {
    const pkg = JSON.parse(readFileSync(join(PACKAGE_DIR, 'package.json'), 'utf8'));
    const match = /^node\s+(\S+)/.exec(pkg.scripts?.bench ?? '');
    if (!match) return undefined;
    const file = join(PACKAGE_DIR, match[1]);
    return existsSync(file) ? file : undefined;
  } catch {
    return undefined;
  }
}

export async function runVmSandboxBench({ timeoutMs, quick }) {
  const script = benchScript();
  if (!script) return { skipped: 'packages/vm-sandbox has no bench script yet' };
  // Its knobs are environment variables (runs and calls); a quick run turns them down.
  const child = spawn(process.execPath, [script], {
    cwd: PACKAGE_DIR,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...(quick ? { BENCH_CREATE_RUNS: '5', BENCH_CALLS: '500' } : {}) },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr.on('data', (chunk) => {
    stderr = (stderr + chunk).slice(-2000);
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const [code, signal] = await new Promise((resolve) => child.once('exit', (c, s) => resolve([c, s])));
  clearTimeout(timer);
  if (code !== 0) {
    return {
      skipped: `its bench ended with ${signal ?? `code ${code}`}: ${stderr.trim().split('\n').at(-1) ?? ''}`,
      output: stdout,
    };
  }
  return { script: script.slice(ROOT.length + 1), output: stdout.trim() };
}
