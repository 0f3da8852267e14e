/** Host places the promise suite makes for one run: a home with a canary, private temp dirs. */
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const IS_ROOT = process.getuid?.() === 0;
/** The attacks that need /proc, python3's xattr calls, setcap or setpriv run on Linux only. */
export const LINUX = process.platform === 'linux';
/** The ordinary user the bridge runs as in the non-root cases (nobody). */
export const ORDINARY_USER = { uid: 65534, gid: 65534 } as const;
export const CANARY = 'promise-suite-canary-5e1d';
export const WITHHELD = { name: 'PROMISE_SUITE_WITHHELD', value: 'never-crosses-9b2c' } as const;

export class SuiteDirs {
  readonly #made: string[] = [];

  /** A fresh directory anyone may enter (as root the sandbox runs as another user). */
  open(prefix: string, mode = 0o755): string {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    chmodSync(dir, mode);
    this.#made.push(dir);
    return dir;
  }

  /** A fresh directory owned by `user`, for a bridge that runs as that user. */
  ownedBy(prefix: string, user: { readonly uid: number; readonly gid: number }): string {
    const dir = this.open(prefix, 0o700);
    chownSync(dir, user.uid, user.gid);
    return dir;
  }

  /** A home holding the canary, readable by anyone: only the sandbox may keep it out of reach. */
  home(): string {
    const home = this.open('promise-home-');
    mkdirSync(join(home, '.ssh'), { mode: 0o755 });
    writeFileSync(join(home, '.ssh', 'id_rsa'), CANARY, { mode: 0o644 });
    writeFileSync(join(home, 'secret.txt'), CANARY, { mode: 0o644 });
    return home;
  }

  removeAll(): void {
    for (const dir of this.#made.splice(0)) rmSync(dir, { recursive: true, force: true });
  }
}
