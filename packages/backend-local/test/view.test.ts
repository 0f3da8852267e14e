import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { commandBinds, dedupeBinds, hiddenRoots, isInside } from '@mcpsandbox/host-side';
import { afterAll, describe, expect, it } from 'vitest';
import { createLocalBackend } from '../src/index.js';
import { sandboxPath } from '../src/view/system-view.js';
import { run } from './helpers.js';

// A fake host home next to this file, with a tool installed the way nvm installs node.
const home = mkdtempSync(join(import.meta.dirname, '.tmp-home-'));
chmodSync(home, 0o755);
const prefix = join(home, '.tools/versions/tool-1.0');
mkdirSync(join(prefix, 'bin'), { recursive: true });
mkdirSync(join(prefix, 'lib'));
writeFileSync(join(prefix, 'lib/data.txt'), 'data from the install prefix\n');
writeFileSync(
  join(prefix, 'bin/mytool'),
  '#!/bin/sh\necho "tool ran"\ncat "$(dirname "$0")/../lib/data.txt"\n',
  {
    mode: 0o755,
  },
);
mkdirSync(join(home, '.ssh'));
writeFileSync(join(home, '.ssh/id_rsa'), 'not for the sandbox\n');
afterAll(() => rmSync(home, { recursive: true, force: true }));

describe('the sandbox view', () => {
  it('hides the host home besides the fixed roots', () => {
    const roots = hiddenRoots(home);
    // Hidden itself, or inside a hidden root (a checkout under /tmp).
    expect(roots.some((root) => isInside(home, root))).toBe(true);
    expect(roots).toContain('/root');
    expect(roots).not.toContain('/');
  });

  it('binds the install prefix of a command under a hidden directory, nothing wider', () => {
    const { binds, pathDir } = commandBinds(join(prefix, 'bin/mytool'), hiddenRoots(home));
    expect(binds).toEqual([{ source: prefix, dest: prefix, mode: 'ro' }]);
    expect(pathDir).toBe(join(prefix, 'bin'));
  });

  it('drops binds covered by a wider one', () => {
    const binds = dedupeBinds([
      { source: '/a/b', dest: '/a/b', mode: 'ro' },
      { source: '/a', dest: '/a', mode: 'ro' },
    ]);
    expect(binds).toEqual([{ source: '/a', dest: '/a', mode: 'ro' }]);
  });

  it('keeps visible host PATH entries and drops hidden ones', () => {
    const path = sandboxPath(['/opt/x/bin'], `${home}/bin:/usr/bin`, hiddenRoots(home));
    expect(path.split(':')[0]).toBe('/opt/x/bin');
    expect(path).toContain('/usr/bin');
    expect(path).not.toContain(home);
  });

  it('runs a command installed under the hidden home, while the rest of that home stays hidden', async () => {
    const box = await createLocalBackend({
      hostEnv: { ...process.env, HOME: home, PATH: `${join(prefix, 'bin')}:${process.env.PATH}` },
    }).create({ sessionId: 'view', env: {}, ttlMs: 30_000 });
    try {
      const result = await run(box, ['mytool']);
      expect(result.stdout).toBe('tool ran\ndata from the install prefix\n');
      const secret = await run(box, ['cat', join(home, '.ssh/id_rsa')]);
      expect(secret.code).not.toBe(0);
      expect(secret.stdout).toBe('');
      const write = await run(box, ['sh', '-c', `echo x > ${join(prefix, 'lib/new.txt')}`]);
      expect(write.code).not.toBe(0);
    } finally {
      await box.close();
    }
  });

  it('removes private directories of host processes that died before close()', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'mcpsandbox-state-'));
    try {
      const abandoned = join(stateDir, 'mcp-sandbox-abandoned');
      mkdirSync(join(abandoned, 'home'), { recursive: true });
      // A pid that cannot be alive (above the kernel's maximum).
      writeFileSync(join(abandoned, '.owner-pid'), '999999999');
      const box = await createLocalBackend({ stateDir }).create({
        sessionId: 'sweep',
        env: {},
        ttlMs: 30_000,
      });
      const own = readdirSync(stateDir).filter((name) => name !== 'mcp-sandbox-abandoned');
      expect(own).toHaveLength(1);
      await box.close();
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(readdirSync(stateDir)).toEqual([]);
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  });

  it('keeps a sandbox with a TTL beyond what setTimeout can hold', async () => {
    const box = await createLocalBackend().create({
      sessionId: 'ttl',
      env: {},
      ttlMs: Number.MAX_SAFE_INTEGER,
    });
    try {
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect((await run(box, ['true'])).code).toBe(0);
    } finally {
      await box.close();
    }
  });

  it("refuses mounts it could not make (no source, the sandbox's own /proc), before anything starts", async () => {
    const backend = createLocalBackend();
    const spec = { sessionId: 'mounts', env: {}, ttlMs: 30_000 };
    await expect(
      backend.create({
        ...spec,
        mounts: [{ hostPath: prefix, sandboxPath: '/proc/granted', mode: 'ro' }],
      }),
    ).rejects.toMatchObject({ code: 'E_USAGE', message: expect.stringContaining('are its own') });
    await expect(
      backend.create({
        ...spec,
        mounts: [{ hostPath: join(home, 'missing'), sandboxPath: '/tmp/x', mode: 'ro' }],
      }),
    ).rejects.toMatchObject({ code: 'E_USAGE' });
    const box = await backend.create({
      ...spec,
      mounts: [{ hostPath: join(prefix, 'lib'), sandboxPath: '/tmp/granted', mode: 'ro' }],
    });
    try {
      expect((await run(box, ['cat', '/tmp/granted/data.txt'])).stdout).toBe(
        'data from the install prefix\n',
      );
    } finally {
      await box.close();
    }
  });

  it.runIf(process.getuid?.() === 0)(
    'as root, binds a readable path behind a directory nobody may enter, and refuses an unreadable one',
    async () => {
      const locked = mkdtempSync(join(import.meta.dirname, '.tmp-locked-'));
      const stateDir = mkdtempSync(join(tmpdir(), 'mcpsandbox-state-'));
      chmodSync(stateDir, 0o755);
      mkdirSync(join(locked, 'inner'), { mode: 0o755 });
      writeFileSync(join(locked, 'inner/data.txt'), 'behind a locked door\n', { mode: 0o644 });
      mkdirSync(join(locked, 'private'), { mode: 0o700 });
      try {
        const backend = createLocalBackend({ stateDir });
        const spec = { sessionId: 'locked', env: {}, ttlMs: 30_000 };
        const box = await backend.create({
          ...spec,
          mounts: [{ hostPath: join(locked, 'inner'), sandboxPath: '/run/inner', mode: 'ro' }],
        });
        try {
          expect((await run(box, ['cat', '/run/inner/data.txt'])).stdout).toBe('behind a locked door\n');
          // The staging mount lived in a mount namespace of its own: nothing is left on the host.
          expect(readFileSync('/proc/self/mountinfo', 'utf8')).not.toContain(stateDir);
        } finally {
          await box.close();
        }
        const refused = await backend.create({
          ...spec,
          mounts: [{ hostPath: join(locked, 'private'), sandboxPath: '/run/private', mode: 'ro' }],
        });
        try {
          await expect(refused.exec(['true'])).rejects.toMatchObject({ code: 'E_BIND_UNREACHABLE' });
        } finally {
          await refused.close();
        }
      } finally {
        rmSync(locked, { recursive: true, force: true });
        rmSync(stateDir, { recursive: true, force: true });
      }
    },
  );
});
