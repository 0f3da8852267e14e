// Where things are, what this binary offers, and what machine the figures come from.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BIN = join(ROOT, 'apps', 'cli', 'dist', 'bin.js');
export const FLOOD_SERVER = join(ROOT, 'bench', 'servers', 'flood.mjs');
/** The `vm` backend runs JavaScript MCP apps, not executables: the same tools as an app. */
export const VM_APP = join(ROOT, 'bench', 'servers', 'vm-app.js');
export const NPX_PACKAGE = '@modelcontextprotocol/server-everything@2026.8.31';

/** Backends a bench can never run here, and why. */
export const UNBENCHABLE = { e2b: 'cloud only (E2B micro-VMs): not benchable on this machine' };

/** The fake MCP server's executable, resolved the way the binary resolves its backends. */
export async function fakeServerBin() {
  const require = createRequire(join(ROOT, 'apps', 'cli', 'package.json'));
  const entry = require.resolve('@mcpsandbox/backend-fake');
  const mod = await import(pathToFileURL(entry).href);
  return mod.fakeMcpServerBinPath();
}

/** Backend names listed under "Backends:" in `run --help`. */
export function offeredBackends() {
  const help = execFileSync(process.execPath, [BIN, 'run', '--help'], { encoding: 'utf8' });
  const section = help.split(/\n(?=Backends:)/)[1] ?? '';
  const names = [];
  for (const line of section.split('\n').slice(1)) {
    if (line.trim() === '') break;
    const match = /^\s+(\S+)\s{2,}/.exec(line);
    if (match) names.push(match[1]);
  }
  return names;
}

function readJson(path) {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
}

function commandOutput(file, args) {
  try {
    return execFileSync(file, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

export function machineInfo() {
  const cpus = os.cpus();
  const versions = {};
  for (const dir of [
    'apps/cli',
    'packages/core',
    'packages/backend-local',
    'packages/backend-fake',
    'packages/vm-sandbox',
  ]) {
    const pkg = readJson(join(ROOT, dir, 'package.json'));
    if (pkg) versions[pkg.name] = pkg.version;
  }
  return {
    date: new Date().toISOString(),
    node: process.version,
    v8: process.versions.v8,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    cpu: cpus[0]?.model ?? 'unknown',
    cores: cpus.length,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    /** Other work on the machine skews the figures: the 1-minute load average when the run began. */
    loadAverage: os.loadavg().map((l) => Math.round(l * 100) / 100),
    bubblewrap: commandOutput('bwrap', ['--version']) ?? null,
    commit: commandOutput('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD']) ?? null,
    packages: versions,
  };
}

/** Anthropic's sandbox-runtime CLI (`srt`), the bench's outside reference, or why it is absent. */
export function srtCli() {
  try {
    const require = createRequire(join(ROOT, 'package.json'));
    const pkgPath = require.resolve('@anthropic-ai/sandbox-runtime/package.json');
    const pkg = readJson(pkgPath);
    return { bin: join(dirname(pkgPath), pkg.bin.srt), version: pkg.version };
  } catch (error) {
    return { missing: `@anthropic-ai/sandbox-runtime is not installed (${error.message.split('\n')[0]})` };
  }
}
