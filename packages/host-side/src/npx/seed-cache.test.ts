import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeDir, type OpenDir, openOwnedDir } from '../host-fs.js';
import { makeInstallCache, placeTarball, SEED_DIR, startSeeding } from './seed-cache.js';
import { type LockedTarball, lockedTarballs, vouchedByRegistry } from './vouched.js';

const work = mkdtempSync(join(tmpdir(), 'mcpsandbox-seed-cache-'));
chmodSync(work, 0o755);
const integrity = (bytes: Buffer | string) => `sha512-${createHash('sha512').update(bytes).digest('base64')}`;
const PUBLIC = Buffer.from('the public tarball of pub@1.0.0');
const OTHER = Buffer.from('the public tarball of other@2.0.0');
/** A private package's tarball that root's npm cached with credentials: no registry serves it to anyone. */
const PRIVATE = Buffer.from('the private tarball of @corp/secret@1.0.0');
const LIMITS = { fileBytes: 2 ** 20, totalBytes: 2 ** 20 };
let n = 0;

/** What the registry gives anyone (no credentials): name → version → tarball. */
const published: Record<string, Record<string, Buffer>> = {
  pub: { '1.0.0': PUBLIC },
  other: { '2.0.0': OTHER },
};
let server: Server;
let registry = '';
/**
 * How the registry answers `/<name>/<version>`: with that version's own document, not at all (an
 * older registry: 404), or with one document whatever version is asked (a proxy's catch-all).
 */
let versionDocs: 'own' | 'none' | 'catch-all' = 'own';
const asked: string[] = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    asked.push(req.url ?? '');
    const [name = '', version] = (req.url ?? '').slice(1).split('/').map(decodeURIComponent);
    const versions = published[name];
    // A private package: only with credentials, which the host never sends.
    if (!versions || req.headers.authorization) return res.writeHead(404).end('{}');
    if (version !== undefined) {
      const [shown, tgz] =
        versionDocs === 'catch-all' ? (Object.entries(versions)[0] ?? []) : [version, versions[version]];
      if (versionDocs === 'none' || !tgz) return res.writeHead(404).end('{}');
      const doc = { name, version: shown, dist: { integrity: integrity(tgz) } };
      return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(doc));
    }
    const body = {
      name,
      versions: Object.fromEntries(
        Object.entries(versions).map(([v, tgz]) => [v, { dist: { integrity: integrity(tgz) } }]),
      ),
    };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  registry = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(work, { recursive: true, force: true });
});

/** Where npm's content store keeps `bytes` below `cache`. */
function contentFile(cache: string, bytes: Buffer): string {
  const hex = createHash('sha512').update(bytes).digest('hex');
  return join(cache, '_cacache', 'content-v2', 'sha512', hex.slice(0, 2), hex.slice(2, 4), hex.slice(4));
}

/** A cache as npm fills it: each tarball under its own sha512 (mode 0644, as npm writes them). */
function npmCache(...tarballs: Buffer[]): string {
  return npmCacheOf(0o644, ...tarballs);
}

/** A cache whose tarballs have `mode`: 0664 makes them writable by the group, so they are copied. */
function npmCacheOf(mode: number, ...tarballs: Buffer[]): string {
  const cache = join(work, `cache-${n++}`);
  mkdirSync(cache, { mode: 0o755 });
  for (const bytes of tarballs) {
    mkdirSync(join(contentFile(cache, bytes), '..'), { recursive: true });
    writeFileSync(contentFile(cache, bytes), bytes);
    chmodSync(contentFile(cache, bytes), mode);
  }
  return cache;
}

/**
 * Whether the uid npm runs as (65534) can append to `file` (root only: setpriv drops to it). The
 * test directories are reachable to it, so only the file's own permissions decide.
 */
function sandboxCanWrite(file: string): boolean {
  try {
    execFileSync(
      'setpriv',
      ['--reuid=65534', '--regid=65534', '--clear-groups', 'sh', '-c', 'echo x >> "$1"', 'sh', file],
      {
        stdio: 'ignore',
      },
    );
    return true;
  } catch {
    return false;
  }
}

function freshDir(): string {
  const dir = join(work, `dir-${n++}`);
  mkdirSync(dir, { mode: 0o700 });
  return dir;
}

/** Every file below `dir`, relative. */
function files(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return (readdirSync(dir, { recursive: true, withFileTypes: true }) as import('node:fs').Dirent[])
    .filter((entry) => !entry.isDirectory())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1))
    .sort();
}

function withDirs<T>(lent: string, into: string, use: (lent: OpenDir, into: OpenDir) => T): T {
  const a = openOwnedDir(lent);
  const b = openOwnedDir(into);
  try {
    return use(a, b);
  } finally {
    closeDir(a);
    closeDir(b);
  }
}

const tarball = (name: string, version: string, bytes: Buffer): LockedTarball => ({
  name,
  version,
  integrity: integrity(bytes),
});

describe('lockedTarballs: the registry tarballs a lock names', () => {
  function parse(lock: unknown): LockedTarball[] {
    const prefix = freshDir();
    writeFileSync(join(prefix, 'package-lock.json'), typeof lock === 'string' ? lock : JSON.stringify(lock));
    const dir = openOwnedDir(prefix);
    try {
      return lockedTarballs(dir);
    } finally {
      closeDir(dir);
    }
  }

  it('takes name, version and one sha512 of each entry; an alias by its real name', () => {
    const sha = integrity(PUBLIC);
    expect(
      parse({
        packages: {
          '': { name: 'root' },
          'node_modules/pub': { version: '1.0.0', integrity: sha },
          'node_modules/@s/a/node_modules/alias': {
            name: 'other',
            version: '2.0.0',
            integrity: integrity(OTHER),
          },
        },
      }),
    ).toEqual([
      { name: 'pub', version: '1.0.0', integrity: sha },
      { name: 'other', version: '2.0.0', integrity: integrity(OTHER) },
    ]);
  });

  it('leaves out links, other hashes, malformed names, versions and integrities, and a lock that is not JSON', () => {
    const sha = integrity(PUBLIC);
    expect(
      parse({
        packages: {
          'node_modules/link': { link: true, version: '1.0.0', integrity: sha },
          'node_modules/sha1': { version: '1.0.0', integrity: 'sha1-AAAAAAAAAAAAAAAAAAAAAAAAAAA=' },
          'node_modules/two': { version: '1.0.0', integrity: `${sha} ${sha}` },
          'node_modules/..': { version: '1.0.0', integrity: sha },
          'node_modules/x': { name: '../../etc', version: '1.0.0', integrity: sha },
          'node_modules/range': { version: '^1.0.0', integrity: sha },
          'node_modules/path': { version: '1.0.0', integrity: 'sha512-../../../../etc/passwd' },
        },
      }),
    ).toEqual([]);
    expect(parse('{"packages":')).toEqual([]);
  });

  it('refuses a lock that is a symlink (the fetch step wrote it)', () => {
    const prefix = freshDir();
    const real = join(work, `real-lock-${n++}.json`);
    writeFileSync(
      real,
      JSON.stringify({
        packages: { 'node_modules/pub': { version: '1.0.0', integrity: integrity(PUBLIC) } },
      }),
    );
    symlinkSync(real, join(prefix, 'package-lock.json'));
    const dir = openOwnedDir(prefix);
    try {
      expect(lockedTarballs(dir)).toEqual([]);
    } finally {
      closeDir(dir);
    }
  });
});

describe('vouchedByRegistry: only what the registry gives anyone for that name@version', () => {
  it('keeps a tarball the registry names for its name@version', async () => {
    const pub = tarball('pub', '1.0.0', PUBLIC);
    expect(await vouchedByRegistry(registry, [pub], { trust: {} })).toEqual([pub]);
  });

  // The shrinkwrap hole: a package's npm-shrinkwrap.json names a private tarball the host's
  // cache holds, by its integrity, under a public name@version or under the private name.
  it('drops a lock entry whose integrity the registry does not give for that name@version', async () => {
    const disguised = tarball('pub', '1.0.0', PRIVATE);
    const asItself = tarball('@corp/secret', '1.0.0', PRIVATE);
    const noSuchVersion = tarball('pub', '9.9.9', PUBLIC);
    expect(await vouchedByRegistry(registry, [disguised, asItself, noSuchVersion], { trust: {} })).toEqual(
      [],
    );
  });

  it('asks nothing more once its total time is spent', async () => {
    const pub = tarball('pub', '1.0.0', PUBLIC);
    expect(await vouchedByRegistry(registry, [pub], { trust: {}, totalMs: 0 })).toEqual([]);
  });

  it('drops everything when the registry cannot be asked', async () => {
    const pub = tarball('pub', '1.0.0', PUBLIC);
    expect(await vouchedByRegistry('http://127.0.0.1:9/', [pub], { trust: {}, timeoutMs: 2_000 })).toEqual(
      [],
    );
  });
});

/** What the seeding does for one vouched tarball. */
const place = (lent: OpenDir, into: OpenDir, wanted: LockedTarball) =>
  placeTarball(lent, into, wanted, LIMITS.fileBytes);

describe('placeTarball: places by integrity, checked, never through a symlink', () => {
  it('links a vouched tarball the host owns and no one else may write, and nothing else of the cache', () => {
    const lent = npmCache(PUBLIC, PRIVATE);
    writeFileSync(join(lent, 'secret-config'), 'token');
    const into = freshDir();
    const placed = withDirs(lent, into, (l, i) => place(l, i, tarball('pub', '1.0.0', PUBLIC)));
    expect(placed).toBe(PUBLIC.length);
    expect(files(into)).toEqual([contentFile(into, PUBLIC).slice(into.length + 1)]);
    expect(statSync(contentFile(into, PUBLIC)).ino).toBe(statSync(contentFile(lent, PUBLIC)).ino);
    expect(readFileSync(contentFile(into, PUBLIC))).toEqual(PUBLIC);
  });

  it('copies, read-only, a vouched tarball others may write', () => {
    const lent = npmCacheOf(0o664, PUBLIC);
    const into = freshDir();
    const placed = withDirs(lent, into, (l, i) => place(l, i, tarball('pub', '1.0.0', PUBLIC)));
    expect(placed).toBe(PUBLIC.length);
    expect(statSync(contentFile(into, PUBLIC)).ino).not.toBe(statSync(contentFile(lent, PUBLIC)).ino);
    expect(readFileSync(contentFile(into, PUBLIC))).toEqual(PUBLIC);
    expect(statSync(contentFile(into, PUBLIC)).mode & 0o777).toBe(0o444);
  });

  // A link shares the file: one the sandbox's uid could write would let an install write root's
  // cache (the group or others may write it, or an ACL's mask lets them; or another uid owns it).
  it("never lends through a link a file the sandbox's uid could write (root only)", () => {
    if (process.getuid?.() !== 0) return expect(process.getuid?.()).not.toBe(0);
    const writable = npmCacheOf(0o666, PUBLIC);
    const others = npmCache(PUBLIC);
    execFileSync('chown', ['65534', contentFile(others, PUBLIC)]);
    const acl = npmCache(PUBLIC);
    execFileSync('setfacl', ['-m', 'u:65534:rw', contentFile(acl, PUBLIC)]);
    for (const lent of [writable, others, acl]) {
      const into = freshDir();
      chmodSync(into, 0o755);
      withDirs(lent, into, (l, i) =>
        placeTarball(l, i, tarball('pub', '1.0.0', PUBLIC), LIMITS.fileBytes, { uid: 65534, gid: 65534 }),
      );
      expect(readFileSync(contentFile(into, PUBLIC))).toEqual(PUBLIC);
      // The sandbox's uid writes what it was given, if it can: root's cache stays as it was.
      sandboxCanWrite(contentFile(into, PUBLIC));
      expect(readFileSync(contentFile(lent, PUBLIC))).toEqual(PUBLIC);
    }
  });

  it('a linked tarball is one the sandbox uid cannot write (root only)', () => {
    if (process.getuid?.() !== 0) return expect(process.getuid?.()).not.toBe(0);
    const lent = npmCache(PUBLIC);
    chmodSync(lent, 0o755);
    const into = freshDir();
    chmodSync(into, 0o755);
    withDirs(lent, into, (l, i) =>
      placeTarball(l, i, tarball('pub', '1.0.0', PUBLIC), LIMITS.fileBytes, { uid: 65534, gid: 65534 }),
    );
    expect(statSync(contentFile(into, PUBLIC)).ino).toBe(statSync(contentFile(lent, PUBLIC)).ino);
    expect(sandboxCanWrite(contentFile(into, PUBLIC))).toBe(false);
    expect(readFileSync(contentFile(lent, PUBLIC))).toEqual(PUBLIC);
  });

  it('gives the directories it makes to the uid npm runs as (root only)', () => {
    if (process.getuid?.() !== 0) return expect(process.getuid?.()).not.toBe(0);
    const lent = npmCache(PUBLIC);
    const into = freshDir();
    withDirs(lent, into, (l, i) =>
      placeTarball(l, i, tarball('pub', '1.0.0', PUBLIC), LIMITS.fileBytes, { uid: 65534, gid: 65534 }),
    );
    expect(statSync(join(contentFile(into, PUBLIC), '..')).uid).toBe(65534);
    expect(statSync(contentFile(into, PUBLIC)).uid).toBe(0);
  });

  it('refuses a cache entry whose content does not match its integrity', () => {
    const lent = npmCache(PUBLIC);
    // The file npm's store names for PUBLIC holds other bytes (a damaged or planted entry).
    writeFileSync(contentFile(lent, PUBLIC), PRIVATE);
    const into = freshDir();
    const placed = withDirs(lent, into, (l, i) => place(l, i, tarball('pub', '1.0.0', PUBLIC)));
    expect(placed).toBeUndefined();
    expect(files(into)).toEqual([]);
  });

  it('never follows a symlink: not as the content file, not as a directory on the way', () => {
    const elsewhere = npmCache(PUBLIC);
    // The link's target holds exactly the vouched bytes: only the link itself can refuse it.
    const lentFile = npmCache();
    mkdirSync(join(contentFile(lentFile, PUBLIC), '..'), { recursive: true });
    symlinkSync(contentFile(elsewhere, PUBLIC), contentFile(lentFile, PUBLIC));
    const lentDir = npmCache();
    mkdirSync(join(lentDir, '_cacache'));
    symlinkSync(join(elsewhere, '_cacache', 'content-v2'), join(lentDir, '_cacache', 'content-v2'));
    for (const lent of [lentFile, lentDir]) {
      const into = freshDir();
      const placed = withDirs(lent, into, (l, i) => place(l, i, tarball('pub', '1.0.0', PUBLIC)));
      expect(placed).toBeUndefined();
      expect(files(into)).toEqual([]);
    }
  });

  it('a FIFO in the cache neither hangs the host nor is copied', () => {
    const lent = npmCache();
    mkdirSync(join(contentFile(lent, PUBLIC), '..'), { recursive: true });
    execFileSync('mkfifo', [contentFile(lent, PUBLIC)]);
    const into = freshDir();
    const placed = withDirs(lent, into, (l, i) => place(l, i, tarball('pub', '1.0.0', PUBLIC)));
    expect(placed).toBeUndefined();
  });

  it('refuses a tarball larger than it may copy', () => {
    const lent = npmCache(PUBLIC);
    const into = freshDir();
    const placed = withDirs(lent, into, (l, i) =>
      placeTarball(l, i, tarball('pub', '1.0.0', PUBLIC), PUBLIC.length - 1),
    );
    expect(placed).toBeUndefined();
    expect(files(into)).toEqual([]);
  });
});

describe("seedInstallCache: the lock's tarballs the registry vouches for, from the lent cache", () => {
  async function install(
    lock: unknown,
    lent: string,
    options: { limits?: typeof LIMITS; signal?: AbortSignal } = {},
  ) {
    const staging = freshDir();
    const prefix = join(staging, 'pkg');
    mkdirSync(prefix);
    writeFileSync(join(prefix, 'package-lock.json'), JSON.stringify(lock));
    const dirs = { staging: openOwnedDir(staging), prefix: openOwnedDir(prefix) };
    try {
      const cache = makeInstallCache(dirs.staging);
      const result = await startSeeding(dirs, cache, lent, registry, {
        trust: {},
        limits: options.limits ?? LIMITS,
        ...(options.signal ? { signal: options.signal } : {}),
      });
      return { cache, seeded: { name: cache.name, result }, dir: join(staging, cache.name) };
    } finally {
      closeDir(dirs.staging);
      closeDir(dirs.prefix);
    }
  }

  // A package's shrinkwrap names the private tarball root's cache holds, under its own name, under
  // a public name@version, and as an alias; an index entry of the cache points a public URL at
  // it. None of it reaches the install's cache; the vouched public tarball does.
  it('a private tarball of the cache that the registry does not vouch for never becomes visible', async () => {
    const lent = npmCache(PUBLIC, PRIVATE);
    mkdirSync(join(lent, '_cacache', 'index-v5', 'aa', 'bb'), { recursive: true });
    writeFileSync(
      join(lent, '_cacache', 'index-v5', 'aa', 'bb', 'planted'),
      `x\t${JSON.stringify({ key: `make-fetch-happen:request-cache:${registry}pub/-/pub-1.0.0.tgz`, integrity: integrity(PRIVATE), path: '../../../../etc/passwd' })}`,
    );
    const { seeded, dir } = await install(
      {
        packages: {
          'node_modules/pub': { version: '1.0.0', integrity: integrity(PUBLIC) },
          'node_modules/pub/node_modules/@corp/secret': { version: '1.0.0', integrity: integrity(PRIVATE) },
          'node_modules/evil/node_modules/pub': { version: '1.0.0', integrity: integrity(PRIVATE) },
          'node_modules/alias': { name: 'other', version: '2.0.0', integrity: integrity(PRIVATE) },
        },
      },
      lent,
    );
    expect(seeded.name).toBe(SEED_DIR);
    expect(seeded.result.seeded.map((t) => `${t.name}@${t.version}`)).toEqual(['pub@1.0.0']);
    expect(files(dir)).toEqual([contentFile(dir, PUBLIC).slice(dir.length + 1)]);
  });

  it('a lent cache that is not the host own (a symlink, or writable by others) seeds nothing', async () => {
    const real = npmCache(PUBLIC);
    const link = join(work, `link-${n++}`);
    symlinkSync(real, link);
    const shared = npmCache(PUBLIC);
    chmodSync(shared, 0o777);
    const lock = { packages: { 'node_modules/pub': { version: '1.0.0', integrity: integrity(PUBLIC) } } };
    for (const lent of [link, shared]) {
      const { seeded, dir } = await install(lock, lent);
      expect(seeded.result.seeded).toEqual([]);
      expect(files(dir)).toEqual([]);
    }
  });
  it('stops at its byte limit', async () => {
    const lent = npmCache(PUBLIC, OTHER);
    const lock = {
      packages: {
        'node_modules/pub': { version: '1.0.0', integrity: integrity(PUBLIC) },
        'node_modules/other': { version: '2.0.0', integrity: integrity(OTHER) },
      },
    };
    const { seeded } = await install(lock, lent, {
      limits: { fileBytes: 2 ** 20, totalBytes: PUBLIC.length + 1 },
    });
    expect(seeded.result.seeded.map((t) => t.name)).toEqual(['pub']);
  });

  it('copies nothing once stopped (the step it seeds for is over)', async () => {
    const lent = npmCache(PUBLIC);
    const lock = { packages: { 'node_modules/pub': { version: '1.0.0', integrity: integrity(PUBLIC) } } };
    const { seeded, dir } = await install(lock, lent, { signal: AbortSignal.abort() });
    expect(seeded.result.seeded).toEqual([]);
    expect(files(dir)).toEqual([]);
  });

  it("asks each version's own document, not the packument of every version", async () => {
    const lent = npmCache(PUBLIC);
    const lock = { packages: { 'node_modules/pub': { version: '1.0.0', integrity: integrity(PUBLIC) } } };
    asked.length = 0;
    const { seeded } = await install(lock, lent);
    expect(seeded.result.seeded.map((t) => t.name)).toEqual(['pub']);
    expect(asked).toEqual(['/pub/1.0.0']);
  });

  it('asks by packument a registry without version documents', async () => {
    const lent = npmCache(PUBLIC, OTHER);
    const lock = {
      packages: {
        'node_modules/pub': { version: '1.0.0', integrity: integrity(PUBLIC) },
        'node_modules/other': { version: '2.0.0', integrity: integrity(OTHER) },
      },
    };
    versionDocs = 'none';
    try {
      const { seeded } = await install(lock, lent);
      expect(seeded.result.seeded.map((t) => t.name).sort()).toEqual(['other', 'pub']);
    } finally {
      versionDocs = 'own';
    }
  });

  // A lock relabels pub@1.0.0's tarball as pub@9.9.9, a version that does not exist; a registry
  // proxy answers every version path with the one document it has.
  it('takes a version document only for the very name@version it asked', async () => {
    const lent = npmCache(PUBLIC);
    const lock = { packages: { 'node_modules/pub': { version: '9.9.9', integrity: integrity(PUBLIC) } } };
    versionDocs = 'catch-all';
    try {
      const { seeded, dir } = await install(lock, lent);
      expect(seeded.result.seeded).toEqual([]);
      expect(files(dir)).toEqual([]);
    } finally {
      versionDocs = 'own';
    }
  });
});

/**
 * The seeding runs while `npm ci` runs in the sandbox, which may write anything into the same
 * cache: links to the host's files and folders, FIFOs, the tarball itself. The host writes none
 * of them, follows none, and replaces nothing.
 */
describe('seeding while the sandbox writes the same cache', () => {
  const wanted = tarball('pub', '1.0.0', PUBLIC);
  const partialOf = (file: string) => join(file, '..', `.${file.split('/').pop()}.seeding`);

  /**
   * The host's side of one tarball, after `plant` played the sandbox (which made the directories).
   * The lent tarball is writable by its group, so it is copied (through a temporary name).
   */
  function seedAfter(plant: (into: string, file: string) => void) {
    const lent = npmCacheOf(0o664, PUBLIC);
    const into = freshDir();
    mkdirSync(join(contentFile(into, PUBLIC), '..'), { recursive: true });
    plant(into, contentFile(into, PUBLIC));
    const placed = withDirs(lent, into, (l, i) => placeTarball(l, i, wanted, LIMITS.fileBytes));
    return { into, placed };
  }

  /** A host file and folder the sandbox would like the host to write. */
  function hostTargets() {
    const folder = freshDir();
    const file = join(folder, 'authorized_keys');
    writeFileSync(file, 'the host file\n');
    return { folder, file };
  }

  it('a content folder made a link to a host folder: nothing is written there', () => {
    const host = hostTargets();
    const { placed } = seedAfter((_into, file) => {
      const folder = join(file, '..');
      rmSync(folder, { recursive: true });
      symlinkSync(host.folder, folder);
    });
    expect(placed).toBeUndefined();
    expect(readdirSync(host.folder)).toEqual(['authorized_keys']);
  });

  it('the temporary name planted as a link to a host file: the file is left as it was', () => {
    const host = hostTargets();
    const { placed } = seedAfter((_into, file) => symlinkSync(host.file, partialOf(file)));
    expect(placed).toBeUndefined();
    expect(readFileSync(host.file, 'utf8')).toBe('the host file\n');
  });

  it('the tarball name planted as a link to a host file: never replaced, never written', () => {
    const host = hostTargets();
    const { into, placed } = seedAfter((_into, file) => symlinkSync(host.file, file));
    expect(placed).toBeUndefined();
    expect(readFileSync(host.file, 'utf8')).toBe('the host file\n');
    expect(existsSync(partialOf(contentFile(into, PUBLIC)))).toBe(false);
  });

  it('a FIFO at the temporary name does not hang the host', () => {
    const { placed } = seedAfter((_into, file) => execFileSync('mkfifo', [partialOf(file)]));
    expect(placed).toBeUndefined();
  });

  it('npm downloaded the tarball first: its copy stays, no temporary file is left', () => {
    const { into, placed } = seedAfter((_into, file) => writeFileSync(file, PUBLIC));
    expect(placed).toBeUndefined();
    expect(readFileSync(contentFile(into, PUBLIC))).toEqual(PUBLIC);
    expect(files(into)).toEqual([contentFile(into, PUBLIC).slice(into.length + 1)]);
  });
});
