import type { SeatbeltPlan } from '../src/profile/plan.js';

/** Fixed inputs for the goldens and decision tables: one user, alice, on Apple silicon. */
export const HOST_HOME = '/Users/alice';
export const SESSION_ROOT = '/private/var/folders/xy/T/mcp-sandbox-sb-AbCdEf';
export const GOLDEN_PROXY_PORT = 41999;
const NODE = '/usr/local/bin/node';
const NODE_REAL = '/usr/local/Cellar/node@22/22.12.0/bin/node';

export const basePlan: SeatbeltPlan = {
  tag: 'golden-session',
  home: `${SESSION_ROOT}/home`,
  tmp: `${SESSION_ROOT}/tmp`,
  runtime: [NODE_REAL, '/opt/mcp-sandbox/servers/everything'],
  dylibDirs: [],
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
    runtime: ['/opt/homebrew/Cellar/node/24.3.0/bin/node', '/opt/homebrew/bin/node'],
    dylibDirs: [
      '/opt/homebrew/Cellar/brotli/1.1.0/lib',
      '/opt/homebrew/Cellar/c-ares/1.34.5/lib',
      '/opt/homebrew/Cellar/icu4c@77/77.1/lib',
      '/opt/homebrew/Cellar/libnghttp2/1.66.0/lib',
      '/opt/homebrew/Cellar/libuv/1.51.0/lib',
      '/opt/homebrew/Cellar/openssl@3/3.5.1/lib',
      '/opt/homebrew/opt/brotli',
      '/opt/homebrew/opt/icu4c@77',
      '/opt/homebrew/opt/openssl@3',
    ],
  },
} satisfies Record<string, SeatbeltPlan>;

export type PlanName = keyof typeof plans;
