import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { unwritableMountWarnings } from './mount-access.js';

const base = mkdtempSync(join(tmpdir(), 'mount-access-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));
const mine = join(base, 'mine');
const open = join(base, 'open');
mkdirSync(mine, { mode: 0o755 });
mkdirSync(open);
chmodSync(open, 0o777);
const nobody = { uid: 65534, gid: 65534 };
const rw = (hostPath: string) => ({ hostPath, sandboxPath: hostPath, mode: 'rw' as const });

describe('rw mounts the sandbox cannot write', () => {
  it('warns, with the owner and the fix, when the sandbox runs as another uid', () => {
    const [warning] = unwritableMountWarnings([rw(mine)], nobody);
    expect(warning).toContain(
      `--mount ${mine}:${mine}:rw: the sandbox runs as uid 65534, which cannot write it`,
    );
    const owner = statSync(mine).uid;
    // The fix leaves the owner alone: an ACL entry for the sandbox's uid, defaults kept for the owner.
    expect(warning).toContain(`setfacl -R -m u:65534:rwX,d:u:65534:rwX,d:u:${owner}:rwX ${mine} `);
    expect(warning).not.toContain('chown');
  });

  it('quotes a path the shell would split', () => {
    const odd = join(base, "it's here");
    mkdirSync(odd, { mode: 0o755 });
    const [warning] = unwritableMountWarnings([rw(odd)], nobody);
    expect(warning).toContain(`'${base}/it'\\''s here'`);
  });

  // As root only: the check is made as the sandbox's uid, so it sees what the mode bits do not.
  it.runIf(process.getuid?.() === 0)(
    'as root: after the suggested setfacl, the directory counts as writable',
    () => {
      const acl = join(base, 'acl');
      mkdirSync(acl, { mode: 0o755 });
      const [warning] = unwritableMountWarnings([rw(acl)], nobody);
      const command = /To let it write: (setfacl \S+ \S+ \S+ \S+)/.exec(warning ?? '')?.[1];
      expect(command).toBeDefined();
      execFileSync('/bin/sh', ['-c', command as string]);
      expect(statSync(acl).uid).toBe(0);
      expect(unwritableMountWarnings([rw(acl)], nobody)).toEqual([]);
    },
  );

  it('says nothing for a writable directory, a read-only mount, or a directory the user may write', () => {
    expect(unwritableMountWarnings([rw(open)], nobody)).toEqual([]);
    expect(unwritableMountWarnings([{ ...rw(mine), mode: 'ro' }], nobody)).toEqual([]);
    expect(unwritableMountWarnings([rw(mine)], undefined)).toEqual([]);
  });
});
