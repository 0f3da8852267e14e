/** One bind as bubblewrap arguments, for a sandbox user who may not reach the source itself. */
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { SandboxFailureError } from '@mcpsandbox/core';
import type { Bind } from '@mcpsandbox/host-side';
import type { LocalHostInfo } from '../probe.js';
import { reachableBy, readableItself } from '../session/process-helpers.js';

/**
 * `nextStage` names a fresh place under the sandbox's own directory; `staged` collects the
 * (source, stage) pairs the staging step binds as root before bwrap starts.
 */
export function bindArgsFor(
  info: LocalHostInfo,
  nextStage: () => string,
  staged: string[],
): (bind: Bind) => string[] {
  return (bind) => {
    const flag = bind.mode === 'rw' ? '--bind' : '--ro-bind';
    // bwrap runs unprivileged: as root we run it as nobody, who must be able to reach the source.
    if (!info.runAs || reachableBy(bind.source, info.runAs)) return [flag, bind.source, bind.dest];
    // Behind a directory nobody may enter (root's home): bind it, as root, onto a place nobody
    // can reach, in a mount namespace of its own that vanishes with the sandbox.
    if (info.staging && readableItself(bind.source, info.runAs)) {
      const stage = nextStage();
      if (statSync(bind.source).isDirectory()) mkdirSync(stage, { recursive: true });
      else {
        mkdirSync(dirname(stage), { recursive: true });
        writeFileSync(stage, '');
      }
      staged.push(bind.source, stage);
      return [flag, stage, bind.dest];
    }
    throw new SandboxFailureError(
      `cannot bind ${bind.source} into the sandbox: mcp-sandbox runs as root, so the sandbox runs as ` +
        `uid ${info.runAs.uid}, which cannot read it. Make it readable (o+r, and o+x for directories) ` +
        'or run mcp-sandbox as a normal user',
      { code: 'E_BIND_UNREACHABLE' },
    );
  };
}
