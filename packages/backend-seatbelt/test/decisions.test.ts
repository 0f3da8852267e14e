import { describe, expect, it } from 'vitest';
import { generateProfile } from '../src/profile/generate.js';
import { MACH_ALLOWLIST } from '../src/profile/system.js';
import { decide, parseProfile, type Query } from '../src/sbpl/evaluate.js';
import { ISSUE_QUESTIONS } from './issue-questions.js';
import { GOLDEN_PROXY_PORT, HOST_HOME, type PlanName, plans, SESSION_ROOT } from './plans.js';

const profiles = Object.fromEntries(
  (Object.keys(plans) as PlanName[]).map((name) => [name, parseProfile(generateProfile(plans[name]))]),
) as Record<PlanName, ReturnType<typeof parseProfile>>;
const ask = (name: PlanName, query: Query) => decide(profiles[name], query).action;

describe('every item the issue lists is denied, in every kind of session', () => {
  for (const name of Object.keys(plans) as PlanName[]) {
    describe(name, () => {
      for (const question of ISSUE_QUESTIONS) {
        it(`denies: ${question.name}`, () => expect(ask(name, question.query)).toBe('deny'));
      }
    });
  }
});

describe('what the plan grants is allowed, and only that', () => {
  it('the session home and tmp are readable and writable', () => {
    for (const path of [`${SESSION_ROOT}/home/.npm/_cacache/x`, `${SESSION_ROOT}/tmp/sock`]) {
      expect(ask('no-grants', { op: 'file-read-data', path })).toBe('allow');
      expect(ask('no-grants', { op: 'file-write-create', path })).toBe('allow');
    }
  });

  it('the system runtime is readable, the runtime executable', () => {
    for (const path of [
      '/usr/lib/libSystem.B.dylib',
      '/System/Library/Frameworks/CoreFoundation.framework/x',
      '/private/etc/ssl/cert.pem',
    ]) {
      expect(ask('no-grants', { op: 'file-read-data', path })).toBe('allow');
    }
    expect(ask('no-grants', { op: 'process-exec', path: '/usr/local/Cellar/node@22/22.12.0/bin/node' })).toBe(
      'allow',
    );
    expect(ask('no-grants', { op: 'process-exec', path: `${HOST_HOME}/bin/tool` })).toBe('deny');
  });

  it('a parent of an allowed path can be stat-ed, not listed', () => {
    expect(ask('rw-mount', { op: 'file-read-metadata', path: HOST_HOME })).toBe('allow');
    expect(ask('rw-mount', { op: 'file-read-data', path: HOST_HOME })).toBe('deny');
    expect(ask('rw-mount', { op: 'file-read-metadata', path: `${HOST_HOME}/.ssh` })).toBe('deny');
    expect(ask('no-grants', { op: 'file-read-metadata', path: HOST_HOME })).toBe('deny');
  });

  it('a rw mount is writable except hooks and startup files, at any depth', () => {
    const mount = `${HOST_HOME}/project`;
    expect(ask('rw-mount', { op: 'file-write-data', path: `${mount}/src/index.ts` })).toBe('allow');
    for (const tail of [
      '.git/hooks/pre-commit',
      '.git/config',
      'sub/.git/hooks/post-checkout',
      '.zshrc',
      '.npmrc',
      '.vscode/settings.json',
      '.mcp.json',
    ]) {
      expect(ask('rw-mount', { op: 'file-write-create', path: `${mount}/${tail}` }), tail).toBe('deny');
      expect(ask('rw-mount', { op: 'file-read-data', path: `${mount}/${tail}` }), tail).toBe('allow');
    }
    expect(ask('rw-mount', { op: 'file-write-data', path: `${HOST_HOME}/project-other/x` })).toBe('deny');
  });

  it('no hard link, not even inside the writable paths (whatever path file-link is matched against)', () => {
    const home = `${SESSION_ROOT}/home`;
    for (const name of Object.keys(plans) as PlanName[]) {
      const writable = [...plans[name].readWrite, plans[name].home, plans[name].tmp];
      for (const dir of writable) {
        expect(ask(name, { op: 'file-link', path: `${dir}/a` }), `${name} ${dir}`).toBe('deny');
        expect(ask(name, { op: 'hard-link', path: `${dir}/a`, newPath: `${dir}/b` }), dir).toBe('deny');
      }
    }
    expect(ask('rw-mount', { op: 'hard-link', path: `${HOST_HOME}/project/x`, newPath: `${home}/x` })).toBe(
      'deny',
    );
  });

  it('in a rw mount, .git and .claude are neither moved, removed nor made; what is inside .git works', () => {
    const mount = `${HOST_HOME}/project`;
    for (const path of [`${mount}/.git`, `${mount}/sub/.git`, `${mount}/.claude`]) {
      for (const op of ['file-write-unlink', 'file-write-create', 'file-write-mode']) {
        expect(ask('rw-mount', { op, path }), `${op} ${path}`).toBe('deny');
      }
    }
    for (const path of [
      `${mount}/.git/objects/ab/cdef`,
      `${mount}/.git/index`,
      `${mount}/.git/refs/heads/x`,
    ]) {
      expect(ask('rw-mount', { op: 'file-write-create', path }), path).toBe('allow');
    }
    expect(ask('rw-mount', { op: 'file-write-create', path: `${mount}/.github/workflows/ci.yml` })).toBe(
      'allow',
    );
  });

  it('the --state home replaces the private one', () => {
    const home = plans.state.home;
    expect(ask('state', { op: 'file-write-data', path: `${home}/notes.db` })).toBe('allow');
    expect(ask('state', { op: 'file-write-data', path: `${SESSION_ROOT}/home/x` })).toBe('deny');
  });

  it('an npx install writes only its prefix; the server only reads the install', () => {
    const prefix = `${HOST_HOME}/.cache/mcp-sandbox/npm/3f2a9c01/prefix`;
    expect(ask('npx-install', { op: 'file-write-create', path: `${prefix}/lib/node_modules/x` })).toBe(
      'allow',
    );
    expect(ask('npx-server', { op: 'file-read-data', path: `${prefix}/lib/node_modules/x/index.js` })).toBe(
      'allow',
    );
    expect(ask('npx-server', { op: 'file-write-data', path: `${prefix}/lib/node_modules/x/index.js` })).toBe(
      'deny',
    );
    expect(
      ask('npx-server', { op: 'file-read-data', path: `${HOST_HOME}/.cache/mcp-sandbox/npm/other/prefix/x` }),
    ).toBe('deny');
  });

  it('a Homebrew node reads its dylib closure, never var or etc', () => {
    expect(
      ask('homebrew-node', {
        op: 'file-read-data',
        path: '/opt/homebrew/Cellar/icu4c@77/77.1/lib/libicuuc.77.dylib',
      }),
    ).toBe('allow');
    expect(
      ask('homebrew-node', {
        op: 'file-map-executable',
        path: '/opt/homebrew/Cellar/openssl@3/3.5.1/lib/libssl.3.dylib',
      }),
    ).toBe('allow');
    for (const path of [
      '/opt/homebrew/var/postgres/PG_VERSION',
      '/opt/homebrew/etc/openssl@3/cert.pem',
      '/opt/homebrew/Cellar/postgresql@16/16.4/bin/postgres',
    ]) {
      expect(ask('homebrew-node', { op: 'file-read-data', path }), path).toBe('deny');
    }
  });

  it('network: none without grants; only the proxy port with them', () => {
    expect(ask('no-grants', { op: 'network-outbound', remote: `localhost:${GOLDEN_PROXY_PORT}` })).toBe(
      'deny',
    );
    expect(ask('network-grant', { op: 'network-outbound', remote: `localhost:${GOLDEN_PROXY_PORT}` })).toBe(
      'allow',
    );
    expect(ask('network-grant', { op: 'network-outbound', remote: 'localhost:5432' })).toBe('deny');
    expect(ask('network-grant', { op: 'network-bind', local: `localhost:${GOLDEN_PROXY_PORT}` })).toBe(
      'deny',
    );
  });

  it('exactly the named Mach services, nothing near them', () => {
    for (const entry of MACH_ALLOWLIST) {
      expect(ask('no-grants', { op: 'mach-lookup', name: entry.name })).toBe('allow');
      expect(ask('no-grants', { op: 'mach-lookup', name: `${entry.name}.x` })).toBe('deny');
      expect(entry.why.length).toBeGreaterThan(10);
    }
  });

  it('signals and process info only inside the sandbox', () => {
    expect(ask('no-grants', { op: 'signal', sameSandbox: true })).toBe('allow');
    expect(ask('no-grants', { op: 'signal', sameSandbox: false })).toBe('deny');
    expect(ask('no-grants', { op: 'process-info-pidinfo', sameSandbox: false })).toBe('deny');
  });
});
