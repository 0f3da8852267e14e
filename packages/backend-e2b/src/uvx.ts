import { posix } from 'node:path';
import { UsageError } from '@mcpsandbox/core';

/** `uvx …` or `uv tool run …`: the starts `local` gives an install step of their own. */
export function isUvxStart(command: readonly string[]): boolean {
  const [program = '', first, second] = command;
  const name = posix.basename(program.replace(/\\/g, '/'));
  return name === 'uvx' || (name === 'uv' && first === 'tool' && second === 'run');
}

/**
 * Why e2b does not run a uvx start: in the VM, uv would install the package with the server's own
 * environment (its secrets) and network, unpinned, at every start, where `npx -y` gets an install
 * of its own. Refused rather than run that way.
 */
export function uvxRefusal(): UsageError {
  return new UsageError(
    'the e2b backend does not run uvx servers yet: in the VM, uv would install the package with the ' +
      "server's own environment (its secrets) and network, unpinned, at every start; run it with " +
      '--backend local (an install step of its own: only the package index reachable, pinned, no secrets), ' +
      'or use an E2B template with the server preinstalled and start its command',
  );
}
