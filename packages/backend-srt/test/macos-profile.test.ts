import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { userDataRoots } from '../src/policy.js';
import { type SessionFsInput, sessionFilesystem } from '../src/profile.js';
import { GOLDEN_PROXY_PORT, type Rule, rulesOf, seatbeltProfile } from './seatbelt.js';

// The Seatbelt profile srt makes on macOS for each kind of session, built on any OS from the
// same config builder a real session uses, kept as golden files, and read rule by rule for the
// promises it carries. `UPDATE_GOLDEN=1 npx vitest run test/macos-profile.test.ts` rewrites them.
const GOLDEN = join(dirname(fileURLToPath(import.meta.url)), 'golden');
const HOST_HOME = '/Users/alice';
const STATE_DIR = '/private/var/folders/xy/T';
const SESSION = `${STATE_DIR}/mcp-sandbox-srt-AbCdEf`;
const RUNTIME = '/opt/homebrew/Cellar/node@20/20.19.0';
const SERVER_PACKAGE = `${HOST_HOME}/.cache/mcp-sandbox/npm/3f2a9c01/prefix`;
const ENGINE = '/opt/mcp-sandbox/node_modules/@anthropic-ai/sandbox-runtime';
const RW_MOUNT = `${HOST_HOME}/notes`;
const STATE_HOME = `${HOST_HOME}/.local/state/mcp-sandbox/state/notes/home`;
/** srt's own temp, made writable by srt in every profile and shared by every session on the Mac. */
const SRT_SHARED_TMP = ['/tmp/claude', '/private/tmp/claude'];
/** What srt itself makes writable in every profile (devices, and its own /tmp/claude). */
const SRT_OWN_WRITES = [
  '/dev/stdout',
  '/dev/stderr',
  '/dev/null',
  '/dev/tty',
  '/dev/dtracehelper',
  '/dev/autofs_nowait',
  '/tmp/claude',
  '/private/tmp/claude',
];

const base: SessionFsInput = {
  platform: 'macos',
  hostHome: HOST_HOME,
  home: `${SESSION}/home`,
  tmp: `${SESSION}/tmp`,
  stateDir: STATE_DIR,
  runtime: [RUNTIME],
  engine: { packageDir: ENGINE, bridgeSockets: [] },
  trustFiles: [],
  readOnly: [SERVER_PACKAGE],
  readWrite: [],
};

interface Kind {
  readonly name: string;
  readonly input: SessionFsInput;
  readonly writable: readonly string[];
}
const kinds: readonly Kind[] = [
  { name: 'no-grants', input: base, writable: [base.home, base.tmp] },
  { name: 'rw-mount', input: { ...base, readWrite: [RW_MOUNT] }, writable: [base.home, base.tmp, RW_MOUNT] },
  // A network grant lives in our egress proxy, never in srt's config: the same inputs.
  { name: 'network-grant', input: base, writable: [base.home, base.tmp] },
  { name: 'state', input: { ...base, home: STATE_HOME }, writable: [STATE_HOME, base.tmp] },
];

function profileFor(kind: Kind): string {
  return seatbeltProfile(sessionFilesystem(kind.input), HOST_HOME);
}

const paths = (rules: readonly Rule[], kind = 'subpath') =>
  rules.flatMap((rule) => rule.filters.filter((f) => f[0] === kind).map((f) => f[1] as string));
const covers = (dir: string, path: string) => path === dir || path.startsWith(`${dir}/`);

describe('macOS Seatbelt profiles (srt 0.0.83) for our sessions', () => {
  for (const kind of kinds) {
    describe(kind.name, () => {
      const profile = profileFor(kind);
      const rules = rulesOf(profile);
      const file = join(GOLDEN, `macos-${kind.name}.sb`);

      it('matches its golden file', () => {
        if (process.env.UPDATE_GOLDEN === '1') writeFileSync(file, profile);
        expect(existsSync(file), `${file} missing: run with UPDATE_GOLDEN=1`).toBe(true);
        expect(profile).toBe(readFileSync(file, 'utf8'));
        expect(profile).not.toMatch(/CMD64_[A-Za-z0-9+/=]+_END_/);
      });

      it('promise "no host files by default": the home and every user data root are denied for reading', () => {
        expect(rules[0]).toEqual({ action: 'deny', ops: ['default'], filters: [] });
        const denied = paths(rules.filter((r) => r.action === 'deny' && r.ops.includes('file-read*')));
        for (const root of userDataRoots('macos', HOST_HOME, STATE_DIR)) expect(denied).toContain(root);
        expect(denied).toContain(HOST_HOME);
        // What is allowed back never covers the home itself or a file of the user's in it.
        const back = rules.filter(
          (r) => r.action === 'allow' && r.ops.includes('file-read*') && r.filters.length,
        );
        for (const path of paths(back)) {
          expect(covers(path, HOST_HOME), `${path} re-opens the home`).toBe(false);
          expect(covers(path, `${HOST_HOME}/.ssh/id_ed25519`)).toBe(false);
        }
        expect(paths(back, 'regex')).toEqual([]);
      });

      it('promise "writes only to the private home, tmp, state and rw mounts"', () => {
        const allowWrite = rules.filter((r) => r.action === 'allow' && r.ops.includes('file-write*'));
        expect(
          allowWrite.every((r) => r.filters.length > 0),
          'an unfiltered write allow',
        ).toBe(true);
        expect(paths(allowWrite, 'regex')).toEqual([]);
        expect(paths(allowWrite, 'literal')).toEqual([]);
        expect(new Set(paths(allowWrite))).toEqual(new Set([...SRT_OWN_WRITES, ...kind.writable]));
        // The private home of another kind of session is not writable in this one.
        if (kind.name === 'state') expect(paths(allowWrite)).not.toContain(base.home);
      });

      it('promise "no writable path shared between sessions": srt\'s shared /tmp/claude is denied for writing', () => {
        // Seatbelt: the last matching rule wins, so a deny after srt's allow takes it back.
        const last = (path: string) =>
          rules.findLast(
            (r) =>
              r.ops.includes('file-write*') &&
              r.filters.some((f) => f[0] === 'subpath' && covers(f[1] as string, path)),
          );
        for (const dir of SRT_SHARED_TMP) {
          expect(last(`${dir}/left-for-the-next-session`)?.action, dir).toBe('deny');
        }
        // Every other writable path is this session's own (or a device, or a rw mount it was given).
        for (const path of kind.writable) expect(last(`${path}/x`)?.action, path).toBe('allow');
      });

      it('promise "egress only through the host proxy": network only to its localhost port', () => {
        const network = rules.filter((r) => r.ops.some((op) => op.startsWith('network')));
        expect(network.length).toBeGreaterThan(0);
        for (const rule of network) {
          expect(rule.action).toBe('allow');
          expect(rule.filters).toEqual([expect.arrayContaining(['ip', `localhost:${GOLDEN_PROXY_PORT}`])]);
        }
        expect(rules.some((r) => r.action === 'allow' && r.ops.includes('network*'))).toBe(false);
      });

      it('the runtime, the server package and srt itself are readable', () => {
        const back = paths(rules.filter((r) => r.action === 'allow' && r.ops.includes('file-read*')));
        for (const path of [RUNTIME, SERVER_PACKAGE, ENGINE, ...kind.writable]) expect(back).toContain(path);
      });
    });
  }

  it('a network grant changes nothing in the profile (it is enforced by our proxy)', () => {
    const [none, grant] = ['no-grants', 'network-grant'].map((name) =>
      readFileSync(join(GOLDEN, `macos-${name}.sb`), 'utf8'),
    );
    expect(grant).toBe(none);
  });
});
