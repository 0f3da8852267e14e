import { readFileSync } from 'node:fs';
import { type ClosureIo, dylibClosure } from '../src/profile/dylib-closure.js';
import type { SeatbeltPlan } from '../src/profile/plan.js';

/** `otool -L` and realpath answers of a Homebrew node 24 on Apple silicon, in otool's format. */
export function homebrewNodeIo(): { binary: string; io: ClosureIo } {
  const recorded = JSON.parse(
    readFileSync(new URL('fixtures/homebrew-node-otool.json', import.meta.url), 'utf8'),
  ) as {
    binary: string;
    otool: Record<string, string>;
    realpath: Record<string, string>;
  };
  const lookup = (table: Record<string, string>, path: string) => {
    const value = table[path];
    if (value === undefined) throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
    return value;
  };
  return {
    binary: recorded.binary,
    io: {
      otoolL: (path) => lookup(recorded.otool, path),
      realpath: (path) => lookup(recorded.realpath, path),
    },
  };
}

const homebrew = homebrewNodeIo();
const homebrewClosure = dylibClosure(homebrew.binary, homebrew.io);

/** Fixed inputs for the goldens and decision tables: one user, alice, on Apple silicon. */
export const HOST_HOME = '/Users/alice';
export const SESSION_ROOT = '/private/var/folders/xy/T/mcp-sandbox-sb-AbCdEf';
export const GOLDEN_PROXY_PORT = 41999;
const NODE_LINK = '/usr/local/bin/node';
const NODE_REAL = '/usr/local/Cellar/node@22/22.12.0/bin/node';

export const basePlan: SeatbeltPlan = {
  tag: 'golden-session',
  home: `${SESSION_ROOT}/home`,
  tmp: `${SESSION_ROOT}/tmp`,
  runtime: [NODE_REAL, '/opt/mcp-sandbox/servers/everything'],
  dylibDirs: [],
  runtimeLinks: [NODE_LINK],
  readOnly: [],
  readWrite: [],
  trustFiles: [],
};

export const plans = {
  'no-grants': basePlan,
  'rw-mount': { ...basePlan, readWrite: [`${HOST_HOME}/project`] },
  'network-grant': { ...basePlan, proxyPort: GOLDEN_PROXY_PORT },
  state: { ...basePlan, home: `${HOST_HOME}/.local/state/mcp-sandbox/states/notes/home` },
  // `npx -y pkg`: the install step (its prefix writable, the registry reachable) and the server
  // run from the installed package (read-only) and its writable copy.
  'npx-install': {
    ...basePlan,
    home: `${SESSION_ROOT}/step-Q1w2E3`,
    readWrite: [`${HOST_HOME}/.cache/mcp-sandbox/npm/3f2a9c01/prefix`],
    proxyPort: GOLDEN_PROXY_PORT,
  },
  'npx-server': {
    ...basePlan,
    readOnly: [`${HOST_HOME}/.cache/mcp-sandbox/npm/3f2a9c01/prefix`],
    readWrite: [`${SESSION_ROOT}/pkg/server-everything`],
  },
  'homebrew-node': {
    ...basePlan,
    runtime: [homebrew.io.realpath(homebrew.binary)],
    dylibDirs: homebrewClosure.dirs,
    runtimeLinks: [homebrew.binary, ...homebrewClosure.links],
  },
} satisfies Record<string, SeatbeltPlan>;

export type PlanName = keyof typeof plans;
