import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { srtEngine } from '../src/engine.js';
import { wrapArgv } from '../src/launch.js';
import { sessionFilesystem } from '../src/profile.js';

// srt anchors its built-in write denies (.git/hooks, .bashrc, …) at process.cwd(): the host's
// working directory must not shape a session's sandbox. Real srt (Linux bubblewrap path).
const scratch = mkdtempSync(join(tmpdir(), 'srt-anchor-'));
// The host cwds outside the denied data roots (srt would skip what is under a denied /tmp).
const projects = mkdtempSync(
  join(dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', '.srt-anchor-'),
);
afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
  rmSync(projects, { recursive: true, force: true });
});

describe('srt backend: the host cwd does not shape the sandbox', () => {
  it('the same session wraps to the same argv from two host cwds, naming neither', async () => {
    const engine = await srtEngine();
    const session = join(scratch, 'session');
    const [projectA, projectB] = ['project-a', 'project-b'].map((name) => join(projects, name));
    for (const dir of [
      join(session, 'home'),
      join(session, 'tmp'),
      join(projectA as string, '.git', 'hooks'),
      projectB as string,
    ])
      mkdirSync(dir, { recursive: true });
    const filesystem = sessionFilesystem({
      platform: engine.platform,
      hostHome: join(scratch, 'host-home'),
      home: join(session, 'home'),
      tmp: join(session, 'tmp'),
      stateDir: scratch,
      runtime: [process.execPath],
      engine,
      trustFiles: [],
      readOnly: [],
      // A rw mount holding a repository: srt denies writes below its cwd only inside writable paths.
      readWrite: [projectA as string],
    });
    const host = process.cwd();
    const wrapFrom = async (cwd: string) => {
      process.chdir(cwd);
      try {
        const argv = await wrapArgv(
          ['/bin/true'],
          {},
          { platform: engine.platform, filesystem, cwd: join(session, 'home'), anchor: session },
        );
        // Control: the host cwd was what it was set to while wrapping, and is given back.
        expect(process.cwd()).toBe(cwd);
        return argv.join(' ').replace(/CMD64_\S+/g, '');
      } finally {
        process.chdir(host);
      }
    };
    const a = await wrapFrom(projectA as string);
    const b = await wrapFrom(projectB as string);
    // From inside the repository srt would deny its .git/hooks and .git/config: the host's cwd.
    expect(a).not.toContain(join(projectA as string, '.git'));
    expect(b).not.toContain(projectB);
    expect(a).toBe(b);
  });
});
