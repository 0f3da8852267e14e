/** How a signal reaches a bubblewrap sandbox's processes. */
import type { ChildProcess } from 'node:child_process';
import type { KillSignal } from '@mcpsandbox/core';
import { killInit, type NamespaceInit } from '@mcpsandbox/host-side';
import { tryKill } from '../session/process-helpers.js';

export function namespaceSignal(
  child: ChildProcess,
  nsInit: Promise<number | undefined>,
  init: Promise<NamespaceInit | undefined>,
): (sig: KillSignal) => void {
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  return (sig) => {
    if (exited) return;
    if (sig === 'SIGKILL') {
      // Killing the namespace's init makes the kernel kill everything inside; bwrap's own
      // --die-with-parent is not trusted (code inside may have changed the init). bwrap's whole
      // process group goes too: the hints relay runs there, outside the pid namespace, and would
      // otherwise live on until it saw itself orphaned.
      tryKill(-(child.pid as number), 'SIGKILL');
      tryKill(child.pid as number, 'SIGKILL');
      void init.then((found) => found && killInit(found));
      return;
    }
    // The sandbox's session: its init ignores SIGTERM from outside, the command gets it.
    void nsInit.then((pid) => {
      if (pid !== undefined && !exited) tryKill(-pid, sig);
    });
  };
}
