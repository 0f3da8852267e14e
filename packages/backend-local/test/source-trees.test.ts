/**
 * Trees a sandbox could write that the host later walks on the user's behalf, attacked through
 * the built `mcp-sandbox` binary: the source of a `--fs` copy, and the path of the command that
 * auto-mount shows. One session (granted the folder read-write) plants; a later one is the target.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, FIXTURES, SHARED_SERVER } from './cli.js';

if (!existsSync(BIN)) throw new Error(`${BIN} is missing: build the workspace first (turbo run build)`);

const work = mkdtempSync(join(tmpdir(), 'mcpsandbox-sources-'));
// As root the sandbox runs as nobody, who must be able to pass through to the fixtures.
chmodSync(work, 0o755);
// rm(1): a tree deeper than PATH_MAX would overflow a recursive removal in JS.
afterAll(() => {
  spawnSync('rm', ['-rf', work]);
});

const SERVER = SHARED_SERVER;
const LIST = '{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n';

/** A directory the sandbox's user can write (also when the tests run as root: then it is nobody). */
function openDir(name: string): string {
  const dir = mkdtempSync(join(work, `${name}-`));
  chmodSync(dir, 0o777);
  return dir;
}

/** `node -e <script> SERVER`: the script runs first, in the sandbox, then the fixture server. */
function withPrelude(script: string): string[] {
  return ['node', '-e', `${script};require(process.argv[1])`, SERVER];
}

/**
 * The fixtures, read-only: a `node -e` prelude names the server only by path, so auto-mount does
 * not show it (and the repository may sit under a hidden root such as /tmp).
 */
const SEE_FIXTURES = ['--mount', `${FIXTURES}:ro`];

/** `mcp-sandbox run <args>` answering one tools/list, to its end. */
function run(args: readonly string[], env: Record<string, string> = {}) {
  const see = args.includes(`${FIXTURES}:ro`) ? [] : SEE_FIXTURES;
  return spawnSync(process.execPath, [BIN, 'run', ...see, ...args], {
    input: LIST,
    encoding: 'utf8',
    timeout: 120_000,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/', ...env },
  });
}

describe('sources the sandbox wrote, walked again by the host', () => {
  it('a --fs copy of a tree of empty directories stops at the directory cap, with a clear error', {
    timeout: 120_000,
  }, () => {
    const project = openDir('dirs');
    // Session one, granted the folder read-write, fills it with empty directories: no file, no byte.
    const plant = run([
      '--mount',
      `${project}:rw`,
      '--',
      ...withPrelude(
        `const fs=require('fs');for(let i=0;i<6000;i++)fs.mkdirSync(${JSON.stringify(project)}+'/d'+i)`,
      ),
    ]);
    // Control: the attack ran.
    expect(readdirSync(project).length, plant.stderr).toBe(6000);
    // Session two copies it. Before the fix every directory was made on the host disk.
    const copy = run(['--fs', `${project}:/work/p`, '--', 'node', SERVER]);
    expect(copy.status).not.toBe(0);
    expect(copy.stderr).toMatch(/more than 2000 directories/);
    expect(copy.stderr).toMatch(/narrower/);
    expect(copy.stderr).not.toMatch(/\n\s+at /);
    // Control: a small tree of directories is copied.
    const small = openDir('few-dirs');
    for (let i = 0; i < 20; i++) mkdirSync(join(small, `d${i}`), { mode: 0o755 });
    const ok = run([
      '--fs',
      `${small}:/work/p`,
      '--',
      ...withPrelude(`process.stderr.write('seen '+require('fs').readdirSync('/work/p').length+'\\n')`),
    ]);
    expect(ok.stderr).toContain('seen 20');
  });

  it('a --fs copy of a tree deeper than PATH_MAX is copied by handle; one deeper than the cap is refused clearly', {
    timeout: 120_000,
  }, () => {
    const project = openDir('deep');
    const long = 'x'.repeat(200);
    // 60 levels of 200-byte names: 12 KB of path, three times PATH_MAX; a leaf file at the bottom.
    const plant = run([
      '--mount',
      `${project}:rw`,
      '--',
      ...withPrelude(
        `const fs=require('fs');process.chdir(${JSON.stringify(project)});for(let i=0;i<60;i++){fs.mkdirSync('${long}');process.chdir('${long}')}fs.writeFileSync('leaf','leaf-ok')`,
      ),
    ]);
    expect(plant.status, plant.stderr).toBe(0);
    // Before the fix: a raw ENAMETOOLONG.
    const copy = run([
      '--fs',
      `${project}:/work/p`,
      '--',
      ...withPrelude(
        `const fs=require('fs');process.chdir('/work/p');for(let i=0;i<60;i++)process.chdir('${long}');process.stderr.write(fs.readFileSync('leaf','utf8')+'\\n')`,
      ),
    ]);
    expect(copy.stderr).not.toContain('ENAMETOOLONG');
    expect(copy.stderr).toContain('leaf-ok');
    // Deeper than the cap (short names): refused, naming the cap.
    const deeper = openDir('deeper');
    run([
      '--mount',
      `${deeper}:rw`,
      '--',
      ...withPrelude(
        `const fs=require('fs');process.chdir(${JSON.stringify(deeper)});for(let i=0;i<300;i++){fs.mkdirSync('d');process.chdir('d')}`,
      ),
    ]);
    const refused = run(['--fs', `${deeper}:/work/p`, '--', 'node', SERVER]);
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toMatch(/more than 128 directory levels/);
    expect(refused.stderr).not.toMatch(/\n\s+at /);
  });

  it('a --fs copy never follows a folder a live session swaps for a link mid-copy', {
    timeout: 240_000,
  }, async () => {
    const source = openDir('swapped');
    const hidden = mkdtempSync(join(work, 'hidden-'));
    const secret = `secret-${randomUUID()}`;
    const real = join(source, 'a');
    mkdirSync(real, { mode: 0o777 });
    for (let i = 0; i < 300; i++) {
      writeFileSync(join(real, `f${i}`), 'plain');
      writeFileSync(join(hidden, `f${i}`), secret);
    }
    // The live session flips `a` between the real folder and a link to the hidden one, holding
    // each a few ms so that a copy can finish inside one state (a copy that fails shows nothing).
    const swap = [
      `const fs=require('fs');const s=${JSON.stringify(source)};let n=0;`,
      `const z=(ms)=>Atomics.wait(new Int32Array(new SharedArrayBuffer(4)),0,0,ms);`,
      `const flip=()=>{for(let i=0;i<20;i++){fs.renameSync(s+'/a',s+'/a.real');fs.symlinkSync(${JSON.stringify(hidden)},s+'/a');z(40);`,
      `fs.unlinkSync(s+'/a');fs.renameSync(s+'/a.real',s+'/a');z(Math.random()*40);n++}fs.writeFileSync(s+'/flips',String(n));setImmediate(flip)};flip()`,
    ].join('');
    const swapper = spawn(
      process.execPath,
      [BIN, 'run', ...SEE_FIXTURES, '--mount', `${source}:rw`, '--', ...withPrelude(swap)],
      {
        stdio: ['pipe', 'ignore', 'ignore'],
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/' },
      },
    );
    try {
      for (let waited = 0; waited < 30_000 && !existsSync(join(source, 'flips')); waited += 100) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      // Control: the swap runs.
      expect(existsSync(join(source, 'flips'))).toBe(true);
      const reader = withPrelude(
        `const fs=require('fs');const seen=[];const walk=(d)=>{for(const e of fs.readdirSync(d,{withFileTypes:true})){const p=d+'/'+e.name;if(e.isDirectory())walk(p);else if(e.isFile())seen.push(fs.readFileSync(p,'utf8'))}};walk('/work/p');process.stderr.write(seen.join(',')+'\\n')`,
      );
      let leaked = false;
      let copied = 0;
      for (let attempt = 0; attempt < 12 && !leaked; attempt++) {
        const copy = run(['--fs', `${source}:/work/p`, '--', ...reader]);
        if (copy.stderr.includes('plain')) copied++;
        leaked = copy.stderr.includes(secret);
      }
      // Before the fix: the copy followed `a` while it was the link and read the hidden files.
      expect(leaked).toBe(false);
      // Control: copies were made (of the real folder, or without it while it was a link).
      expect(copied).toBeGreaterThan(0);
    } finally {
      swapper.kill('SIGTERM');
      await new Promise((resolve) => swapper.once('close', resolve));
    }
  });

  it('auto-mount does not follow a folder an earlier session replaced with a link in a rw mount', {
    timeout: 120_000,
  }, () => {
    // The user's home (hidden from every sandbox) holds another project, with a secret in it.
    const home = mkdtempSync(join(import.meta.dirname, '.tmp-home-'));
    try {
      chmodSync(home, 0o755);
      const other = join(home, 'other');
      mkdirSync(other, { mode: 0o755 });
      const secret = `secret-${randomUUID()}`;
      writeFileSync(join(other, 'secret.txt'), secret, { mode: 0o644 });
      writeFileSync(join(other, 'index.cjs'), `require(${JSON.stringify(SERVER)})\n`, { mode: 0o644 });
      const project = join(home, 'proj');
      mkdirSync(join(project, 'dist'), { recursive: true });
      chmodSync(project, 0o777);
      chmodSync(join(project, 'dist'), 0o777);
      writeFileSync(join(project, 'dist', 'index.cjs'), `require(${JSON.stringify(SERVER)})\n`, {
        mode: 0o666,
      });
      const env = { HOME: home };
      const mount = ['--mount', `${project}:/work/proj:rw`, '--mount', `${FIXTURES}:ro`];
      // Session one, granted the project read-write, swaps dist/ for a link to the other project.
      const plant = run(
        [
          ...mount,
          '--',
          ...withPrelude(
            `const fs=require('fs');fs.rmSync('/work/proj/dist',{recursive:true});fs.symlinkSync(${JSON.stringify(other)},'/work/proj/dist')`,
          ),
        ],
        env,
      );
      expect(plant.status, plant.stderr).toBe(0);
      // Session two: the user starts the project's server as always; it looks for the secret.
      const probe = `try{process.stderr.write('read '+require('fs').readFileSync(${JSON.stringify(join(project, 'dist', 'secret.txt'))},'utf8')+'\\n')}catch(e){process.stderr.write('hidden '+e.code+'\\n')}`;
      writeFileSync(join(other, 'index.cjs'), `${probe};require(${JSON.stringify(SERVER)})\n`, {
        mode: 0o644,
      });
      const started = run([...mount, '--', 'node', join(project, 'dist', 'index.cjs')], env);
      // Before the fix: the host bound proj/dist, which its --ro-bind followed to the other project.
      expect(started.stderr).not.toContain(secret);
      expect(started.stderr).toMatch(/passes through a read-write mount/);
      // Control: without the rw mount in this session the same command is shown (and reads it).
      const control = run(
        ['--mount', `${FIXTURES}:ro`, '--', 'node', join(project, 'dist', 'index.cjs')],
        env,
      );
      expect(control.stderr).toContain(secret);
    } finally {
      spawnSync('rm', ['-rf', home]);
    }
  });
});
