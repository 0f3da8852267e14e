#!/usr/bin/env node
import { closeInheritedDescriptors } from './inherited-fds.js';
import { packageVersion, versionOnly } from './version.js';

closeInheritedDescriptors();

const args = process.argv.slice(2);
// `--version` answers as the program would, before the program (commander, the commands, core) is
// loaded: a check of the install should cost no more than starting Node.
async function start(): Promise<number> {
  if (versionOnly(args)) {
    process.stdout.write(`${packageVersion()}\n`);
    return 0;
  }
  // A plain `run` starts its server (on local, in its sandbox) now, while the program loads
  // (early-start.ts).
  const early = args[0] === 'run' && args.includes('--') ? await loadEarlyStart() : undefined;
  try {
    const program = await import('./main.js');
    // The young generation stays at its first size: the bridge's live heap is a few MB, and V8
    // would otherwise grow it under traffic, and RSS with it, for no gain in speed
    // (docs/performance.md). Set once the program has loaded, not as a node flag on the `#!` line:
    // a heap-size flag there slows Node's loading of its own modules, about 20 ms of every start.
    (await import('node:v8')).setFlagsFromString('--semi-space-growth-factor=1');
    return await program.main(args);
  } finally {
    await early?.discardEarlyStart();
  }
}

/** The early start, begun; a failure of it only means the program starts the server itself. */
async function loadEarlyStart(): Promise<typeof import('./early-start.js') | undefined> {
  try {
    const early = await import('./early-start.js');
    await early.startEarly(args, process.env);
    return early;
  } catch {
    return undefined;
  }
}

// A promise chain, not a top-level await: with one anywhere, the bundler keeps every module that
// `run` shares with a lazily loaded command in a chunk of its own, and each start opens them all.
start().then((code) => {
  // Give stdout a moment to flush the last replies, but never wait on a client that stopped reading.
  const timer = setTimeout(() => process.exit(code), 2_000);
  process.stdout.write('', () => {
    clearTimeout(timer);
    process.exit(code);
  });
});
