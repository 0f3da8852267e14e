import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
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
    expect(warning).toContain(`chown 65534:65534 ${mine}`);
  });

  it('says nothing for a writable directory, a read-only mount, or a directory the user may write', () => {
    expect(unwritableMountWarnings([rw(open)], nobody)).toEqual([]);
    expect(unwritableMountWarnings([{ ...rw(mine), mode: 'ro' }], nobody)).toEqual([]);
    expect(unwritableMountWarnings([rw(mine)], undefined)).toEqual([]);
  });
});
