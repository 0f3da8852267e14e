/**
 * Runs inside an install sandbox as `node npm-gate.js <npm-cli.js> <npm's arguments…>`: npm's
 * `ci`, started while the resolve step before it still runs. It loads npm's install code now
 * (about a third of a second of a start), waits until the host ends its stdin (the lock is
 * written and the install's cache is ready), then runs npm as npm's own bin does. What it
 * cannot load now npm loads as usual; a host that goes away ends stdin too, and npm then finds
 * whatever lock there is, as a plain start would.
 */
import { readSync } from 'node:fs';
import { createRequire } from 'node:module';

const [node = 'node', , npmCli, ...args] = process.argv;

/** Blocks until fd 0 ends (or fails): the host's go-ahead. */
function waitForEnd(): void {
  const buffer = Buffer.alloc(256);
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    try {
      if (readSync(0, buffer, 0, buffer.length, null) === 0) return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') return;
      Atomics.wait(pause, 0, 0, 10);
    }
  }
}

if (npmCli === undefined) {
  process.stderr.write('npm-gate: usage: node npm-gate.js <npm-cli.js> [npm arguments]\n');
  process.exit(2);
}
const load = createRequire(npmCli);
try {
  // The modules `npm ci` spends its start loading; cached, npm's own require finds them loaded.
  load('@npmcli/arborist');
} catch {
  // another npm layout: npm loads what it needs itself
}
waitForEnd();
process.argv = [node, npmCli, ...args];
load(npmCli);
