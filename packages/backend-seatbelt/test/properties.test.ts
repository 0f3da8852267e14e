import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { generateProfile } from '../src/profile/generate.js';
import { profilePath, type SeatbeltPlan } from '../src/profile/plan.js';
import { DEVICE_FILES, MACH_ALLOWLIST, OWN_FD_PATHS, SYSTEM_READ_ROOTS } from '../src/profile/system.js';
import { decide, parseProfile } from '../src/sbpl/evaluate.js';
import { basePlan, HOST_HOME, type PlanName, plans } from './plans.js';

const inside = (path: string, root: string) => path === root || path.startsWith(`${root}/`);

/** A path segment as an attacker might name a directory: quotes, parens, backslashes, unicode. */
const segment = fc
  .string({
    unit: fc.constantFrom('a', 'B', '.', '-', ' ', '"', '\\', '(', ')', ';', '#', '*', 'é', '日', '@', '$'),
    minLength: 1,
    maxLength: 8,
  })
  .filter((s) => s !== '.' && s !== '..');
const tail = fc
  .array(segment, { minLength: 0, maxLength: 4 })
  .map((parts) => parts.map((p) => `/${p}`).join(''));

/** Places the issue names as host data: each root, and each root's firmlink spelling. */
const dataRoots = [
  HOST_HOME,
  '/Users/bob',
  '/private/var/root',
  '/Volumes/Backup',
  '/Library',
  '/Library/Developer',
  '/Library/Apple',
  '/opt/homebrew/var',
  '/opt/homebrew/etc',
  '/usr/local/var',
  '/usr/local/etc',
  '/private/var/tmp',
  '/private/var/log',
  '/private/tmp',
  '/private/var/folders',
  '/cores',
  '/Network',
  '/nix',
];
const dataPath = fc
  .tuple(fc.constantFrom(...dataRoots), tail, fc.boolean())
  .map(([root, rest, firmlink]) => (firmlink ? `/System/Volumes/Data${root}${rest}` : `${root}${rest}`));
const devicePath = fc
  .tuple(
    fc.constantFrom('/dev/ttys', '/dev/tty', '/dev/ptyp', '/dev/bpf', '/dev/disk', '/dev/rdisk'),
    fc.nat(999),
  )
  .map(([prefix, n]) => `${prefix}${n}`);

/** What the plan says may be read, computed from the plan, not from the profile. */
function planReads(plan: SeatbeltPlan, path: string): boolean {
  if (path.startsWith('/System/Volumes/Data/') || /^\/dev\/(tty|pty|bpf|[^/]*disk)/.test(path)) return false;
  // Apple's runtime trees that sit under /Library (Rosetta, the Command Line Tools) are the system's.
  if (SYSTEM_READ_ROOTS.some((root) => inside(path, root))) return true;
  const roots = [
    plan.home,
    plan.tmp,
    ...plan.runtime,
    ...plan.dylibDirs,
    ...plan.readOnly,
    ...plan.readWrite,
    ...plan.trustFiles,
  ];
  return roots.some((root) => inside(path, profilePath(root, 'test')));
}

function planWrites(plan: SeatbeltPlan, path: string): boolean {
  if (DEVICE_FILES.includes(path) || OWN_FD_PATHS.some((root) => inside(path, root))) return true;
  return [plan.home, plan.tmp, ...plan.readWrite].some((root) => inside(path, profilePath(root, 'test')));
}

const names = Object.keys(plans) as PlanName[];
const compiled = new Map(names.map((name) => [name, parseProfile(generateProfile(plans[name]))]));
const RUNS = { numRuns: 300 };

describe('property: the profile allows exactly what the plan says', () => {
  it('a path under a data root, its firmlink alias or a terminal/bpf/disk is read only if the plan grants it', () => {
    fc.assert(
      fc.property(fc.constantFrom(...names), fc.oneof(dataPath, devicePath), (name, path) => {
        const action = decide(compiled.get(name) as ReturnType<typeof parseProfile>, {
          op: 'file-read-data',
          path,
        }).action;
        expect(action).toBe(planReads(plans[name], path) ? 'allow' : 'deny');
      }),
      RUNS,
    );
  });

  it('every path the profile lets a process write is writable in the plan', () => {
    const anyPath = fc.oneof(
      dataPath,
      devicePath,
      fc.tuple(fc.constantFrom(...names), tail).map(([n, t]) => `${plans[n].home}${t}`),
    );
    fc.assert(
      fc.property(
        fc.constantFrom(...names),
        anyPath,
        fc.constantFrom('file-write-data', 'file-write-create', 'file-write-unlink', 'file-link'),
        (name, path, op) => {
          const action = decide(compiled.get(name) as ReturnType<typeof parseProfile>, { op, path }).action;
          if (action === 'allow') expect(planWrites(plans[name], path)).toBe(true);
        },
      ),
      RUNS,
    );
  });

  it('no Mach name outside the allowlist is reachable', () => {
    const allowed = new Set(MACH_ALLOWLIST.map((entry) => entry.name));
    const machName = fc.oneof(
      fc.string({ minLength: 1, maxLength: 40 }),
      fc
        .tuple(
          fc.constantFrom('com.apple.', 'com.apple.system.', 'com.apple.lsd.'),
          fc.string({ maxLength: 20 }),
        )
        .map(([a, b]) => a + b),
    );
    fc.assert(
      fc.property(fc.constantFrom(...names), machName, (name, service) => {
        const action = decide(compiled.get(name) as ReturnType<typeof parseProfile>, {
          op: 'mach-lookup',
          name: service,
        }).action;
        expect(action).toBe(allowed.has(service) ? 'allow' : 'deny');
      }),
      RUNS,
    );
  });

  it('any printable mount name stays one literal: writable itself, its siblings and parents not', () => {
    fc.assert(
      fc.property(segment, tail, (first, rest) => {
        const mount = `${HOST_HOME}/${first}${rest}`;
        const profile = parseProfile(generateProfile({ ...basePlan, readWrite: [mount] }));
        expect(decide(profile, { op: 'file-write-data', path: `${mount}/f` }).action).toBe('allow');
        expect(decide(profile, { op: 'file-write-data', path: `${mount}x/f` }).action).toBe('deny');
        expect(decide(profile, { op: 'file-read-data', path: `${HOST_HOME}/.ssh/id_ed25519` }).action).toBe(
          'deny',
        );
        expect(
          decide(profile, { op: 'file-write-create', path: `${mount}/.git/hooks/pre-commit` }).action,
        ).toBe('deny');
      }),
      RUNS,
    );
  });
});
