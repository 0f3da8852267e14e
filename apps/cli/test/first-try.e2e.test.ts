import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnBin } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'first-try-e2e-'));
chmodSync(dir, 0o755);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('first-try problems are named at start, with the fix (local backend)', () => {
  // Before, a root-owned directory mounted rw while running as root was silently unwritable.
  it('warns when the sandbox user cannot write a rw mount, and the server indeed cannot', async () => {
    const data = join(dir, 'data');
    mkdirSync(data);
    // As root the sandbox runs as uid 65534: root's 0755 directory is not its to write. As a normal
    // user, the sandbox is that user: a 0555 directory is not writable either.
    chmodSync(data, process.getuid?.() === 0 ? 0o755 : 0o555);
    const result = await spawnBin([
      'run',
      '--mount',
      `${data}:rw`,
      '--',
      'sh',
      '-c',
      `touch ${data}/x 2>/dev/null && echo WROTE >&2 || echo DENIED >&2`,
    ]).result;
    expect(result.stderr).toMatch(
      new RegExp(`--mount ${data}:${data}:rw: the sandbox runs as .* which cannot write it`),
    );
    expect(result.stderr).toContain('To let it write:');
    expect(result.stderr, result.stderr).toContain('DENIED');
  });

  // Before, the offered fix as root was `chown 65534:65534 <project>`: the project lost its owner.
  it.runIf(process.getuid?.() === 0)(
    'as root: the offered fix keeps the owner, and after it the server writes the mount',
    async () => {
      const project = join(dir, 'project');
      mkdirSync(project);
      chmodSync(project, 0o755);
      const write = ['--', 'sh', '-c', `echo hi > ${project}/made && echo WROTE >&2 || echo DENIED >&2`];
      const before = await spawnBin(['run', '--mount', `${project}:rw`, ...write]).result;
      // Control: without the fix the server really is refused.
      expect(before.stderr, before.stderr).toContain('DENIED');
      const fix = /To let it write: (setfacl \S+ \S+ \S+ \S+)/.exec(before.stderr)?.[1];
      expect(fix, before.stderr).toBeDefined();
      expect(before.stderr).not.toContain('chown');
      execFileSync('/bin/sh', ['-c', fix as string]);
      const after = await spawnBin(['run', '--mount', `${project}:rw`, ...write]).result;
      expect(after.stderr, after.stderr).toContain('WROTE');
      expect(after.stderr).not.toContain('cannot write it');
      // The project keeps its owner and mode bits; what the server made stays its owner's to edit.
      expect(statSync(project).uid).toBe(0);
      expect(readFileSync(join(project, 'made'), 'utf8')).toBe('hi\n');
      const acl = execFileSync('getfacl', ['-pn', join(project, 'made')], { encoding: 'utf8' });
      expect(acl).toMatch(/^user:0:rwx\s+#effective:rw-$/m);
    },
  );

  // Before: refused, "does not exist in the sandbox's read-only view" for any target outside
  // /tmp, /home, /mnt and /run.
  it('mounts at any absolute path, creating the mount point in the sandbox only', async () => {
    const data = join(dir, 'anywhere');
    mkdirSync(data);
    writeFileSync(join(data, 'f.txt'), 'found it\n');
    chmodSync(data, 0o755);
    for (const target of ['/srv/mcp-sandbox-test/data', '/mcp-sandbox-test-data']) {
      const result = await spawnBin([
        'run',
        '--mount',
        `${data}:${target}`,
        '--',
        'sh',
        '-c',
        `cat ${target}/f.txt >&2; touch /x 2>/dev/null || echo ROOT-READ-ONLY >&2; ls /usr/bin/env >&2`,
      ]).result;
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toContain('found it');
      expect(result.stderr).toContain('ROOT-READ-ONLY');
      expect(result.stderr).toContain('/usr/bin/env');
      expect(existsSync(target)).toBe(false);
    }
  });

  it("still refuses the sandbox's own /, /proc and /dev as targets", async () => {
    const result = await spawnBin(['run', '--mount', `${dir}:/proc/x`, '--', 'true']).result;
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("the sandbox's /, /proc and /dev are its own");
  });
});
