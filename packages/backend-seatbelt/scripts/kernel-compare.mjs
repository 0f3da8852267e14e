// macOS only: asks the kernel the evaluator's questions and fails on any disagreement.
// 1. every golden profile compiles and runs under sandbox-exec;
// 2. a plan over real paths of this machine (a secret under $HOME, its firmlink spelling, a rw
//    mount with a .git/hooks, system files, Homebrew's etc/var, bpf, disks) is generated, and for
//    each path the evaluator's read/write answer is compared with what the kernel does to
//    /bin/cat and /usr/bin/touch under that profile ("Operation not permitted" = Seatbelt said no).
// Usage (after `pnpm build`): node scripts/kernel-compare.mjs
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { decide, generateProfile, parseProfile } from '../dist/index.js';

if (process.platform !== 'darwin') {
  process.stderr.write('kernel-compare runs on macOS only (it needs sandbox-exec)\n');
  process.exit(2);
}

const failures = [];
const run = (profile, argv) =>
  spawnSync('/usr/bin/sandbox-exec', ['-p', profile, '--', ...argv], { encoding: 'utf8', timeout: 20_000 });

const goldenDir = new URL('../test/golden/', import.meta.url);
for (const name of readdirSync(goldenDir).filter((n) => n.endsWith('.sb'))) {
  const result = run(readFileSync(new URL(name, goldenDir), 'utf8'), ['/usr/bin/true']);
  if (result.status !== 0)
    failures.push(`golden ${name} does not run under sandbox-exec: ${result.stderr.trim()}`);
  else process.stdout.write(`ok   golden ${name} compiles and runs\n`);
}

const home = realpathSync(homedir());
const base = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-sandbox-sb-kc-')));
const mount = realpathSync(mkdtempSync(join(home, 'mcp-sb-kc-mount-')));
const secretDir = realpathSync(mkdtempSync(join(home, 'mcp-sb-kc-secret-')));
for (const dir of [join(base, 'home'), join(base, 'tmp'), join(mount, '.git', 'hooks')])
  mkdirSync(dir, { recursive: true });
const secret = join(secretDir, 'id_ed25519');
writeFileSync(secret, 'secret\n');
writeFileSync(join(mount, 'file.txt'), 'x\n');
writeFileSync(join(mount, '.git', 'hooks', 'pre-commit'), '#!/bin/sh\n');

const plan = {
  tag: 'kernel-compare',
  home: join(base, 'home'),
  tmp: join(base, 'tmp'),
  runtime: [],
  dylibDirs: [],
  readOnly: [],
  readWrite: [mount],
  trustFiles: [],
};
const text = generateProfile(plan);
const profile = parseProfile(text);

const firstFile = (dir) => {
  try {
    const entry = readdirSync(dir, { withFileTypes: true }).find((e) => e.isFile());
    return entry ? join(dir, entry.name) : undefined;
  } catch {
    return undefined;
  }
};
const reads = [
  secret,
  `/System/Volumes/Data${secret}`,
  join(mount, 'file.txt'),
  join(mount, '.git', 'hooks', 'pre-commit'),
  '/private/etc/hosts',
  '/usr/lib/dyld',
  '/Library/Keychains/System.keychain',
  '/private/var/log/system.log',
  '/System/Volumes/Data/Library/Keychains/System.keychain',
  firstFile('/opt/homebrew/etc'),
  firstFile('/usr/local/etc'),
  firstFile('/private/var/tmp'),
  firstFile('/Library/Preferences'),
  '/dev/bpf0',
  '/dev/disk0',
  '/dev/ttys000',
].filter((path) => path !== undefined && existsSync(path));
const writes = [
  join(plan.home, 'new'),
  join(mount, 'new'),
  join(mount, '.git', 'hooks', 'post-checkout'),
  join(secretDir, 'new'),
  join(base, 'beside-home'),
];

const kernelSays = (result) => (/Operation not permitted/.test(result.stderr) ? 'deny' : 'allow');
const check = (what, op, path, argv, newPath) => {
  const resolved = path.startsWith('/System/Volumes/Data') ? path : realOr(path);
  const expected = decide(profile, {
    op,
    path: resolved,
    ...(newPath ? { newPath: realOr(newPath) } : {}),
  }).action;
  const got = kernelSays(run(text, argv));
  const line = `${what} ${path}: evaluator ${expected}, kernel ${got}`;
  if (expected !== got) failures.push(line);
  else process.stdout.write(`ok   ${line}\n`);
};
function realOr(path) {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}
for (const path of reads) check('read ', 'file-read-data', path, ['/bin/cat', path]);
for (const path of writes) check('write', 'file-write-create', path, ['/usr/bin/touch', path]);
// A hard link in the home to a file outside would give it a readable name (and a write through
// it would change the file): the kernel must refuse, and the profile allows no link at all.
writeFileSync(join(plan.home, 'own'), 'x');
for (const [existing, alias] of [
  [secret, 'hardlink'],
  [join(mount, 'file.txt'), 'hardlink2'],
  [join(plan.home, 'own'), 'hardlink3'],
]) {
  check(
    'link ',
    'hard-link',
    existing,
    ['/bin/ln', existing, join(plan.home, alias)],
    join(plan.home, alias),
  );
}

rmSync(base, { recursive: true, force: true });
rmSync(mount, { recursive: true, force: true });
rmSync(secretDir, { recursive: true, force: true });
for (const failure of failures) process.stdout.write(`FAIL ${failure}\n`);
process.stdout.write(`${reads.length + writes.length} questions, ${failures.length} disagreements\n`);
process.exit(failures.length === 0 ? 0 : 1);
