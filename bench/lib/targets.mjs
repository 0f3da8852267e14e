// The ways to reach the same server: directly, or through the bridge on each backend.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { initializeRequest, RawClient } from './client.mjs';
import { BIN } from './env.mjs';

/**
 * A target: `argv(server)` gives the command that serves `server` (an argv that runs the MCP
 * server directly) on this target. `bridge` says whether a bridge process sits in between.
 */
export function directTarget() {
  return { name: 'direct', bridge: false, argv: (server) => server };
}

/**
 * Node options the binary's shebang asks for (`#!/usr/bin/env -S node --flag`): how it runs once
 * installed, so the bench passes them too when it starts the binary with `node`.
 */
export function shebangNodeOptions(bin = BIN) {
  const first = readFileSync(bin, 'utf8').split('\n', 1)[0];
  const match = /^#!\S*env\s+(?:-S\s+)?node\b(.*)$/.exec(first);
  return match ? match[1].trim().split(/\s+/).filter(Boolean) : [];
}
export const BIN_NODE_OPTIONS = shebangNodeOptions();

export function bridgeTarget(name, backend, { extraArgs = [], nodeOptions = [], serverOverride } = {}) {
  return {
    name,
    bridge: true,
    backend,
    nodeOptions,
    /** `more`: further `run` options for this one command (such as `--trace file`). */
    argv: (server, more = []) => [
      process.execPath,
      ...BIN_NODE_OPTIONS,
      ...nodeOptions,
      BIN,
      'run',
      '-q',
      '--backend',
      backend,
      ...extraArgs,
      ...more,
      '--',
      ...(serverOverride ?? server),
    ],
  };
}

/** A trace file in a private temp dir, removed by `dispose`. */
export function tempTrace() {
  const dir = mkdtempSync(join(os.tmpdir(), 'mcpsandbox-bench-'));
  return { path: join(dir, 'trace.jsonl'), dispose: () => rmSync(dir, { recursive: true, force: true }) };
}

export function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** Starts `argv` and waits for its answer to `initialize`. Kills it and throws on failure. */
export async function startSession(argv, { timeoutMs = 20_000, cwd, env } = {}) {
  const client = new RawClient(argv, { ...(cwd ? { cwd } : {}), ...(env ? { env } : {}) });
  try {
    await withTimeout(
      Promise.race([
        client.call(0, initializeRequest(0)),
        client.exited.then((status) => {
          throw new Error(
            `exited (${status.error?.message ?? `code ${status.code}, signal ${status.signal}`}) before answering`,
          );
        }),
      ]),
      timeoutMs,
      'initialize',
    );
  } catch (error) {
    await client.kill();
    const tail = client.stderrTail.trim().split('\n').slice(-2).join(' / ');
    throw new Error(`${error.message}${tail ? `: ${tail}` : ''}`);
  }
  return client;
}

/** Milliseconds from spawning `argv` to its answer to `initialize`; the process is then closed. */
export async function timeToInitialize(argv, options = {}) {
  const client = await startSession(argv, options);
  const ms = Number(process.hrtime.bigint() - client.spawnedAt) / 1e6;
  await client.close(3_000);
  return ms;
}
