/**
 * Runs inside an install sandbox as `node npm-gate.js <npm-cli.js> <npm's arguments…>`: npm's
 * `ci`, started while the resolve step before it still runs. It loads npm's install code now
 * (about a third of a second of a start), waits for the host's go-ahead on stdin (the lock is
 * written and the install's cache is ready), then runs npm as npm's own bin does. What it cannot
 * load now npm loads as usual. Stdin that ends without the go-ahead (the host went away, or an
 * engine gave no stdin) runs nothing: npm never meets a lock still being written.
 */
import { readSync } from 'node:fs';
import { createRequire } from 'node:module';
import { GO_AHEAD } from './npx/go-ahead.js';

const [node = 'node', , npmCli, ...args] = process.argv;

/** Blocks until fd 0 carries the go-ahead (true), or ends or fails without it (false). */
function waitForGoAhead(): boolean {
  const buffer = Buffer.alloc(16);
  const pause = new Int32Array(new SharedArrayBuffer(4));
  let said = '';
  for (;;) {
    try {
      const n = readSync(0, buffer, 0, buffer.length, null);
      if (n === 0) return false;
      said = (said + buffer.toString('latin1', 0, n)).slice(-GO_AHEAD.length);
      if (said === GO_AHEAD) return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') return false;
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
if (!waitForGoAhead()) {
  process.stderr.write('npm-gate: stdin ended before the host said to go on; nothing installed\n');
  process.exit(75);
}
process.argv = [node, npmCli, ...args];
load(npmCli);
