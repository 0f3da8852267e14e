#!/usr/bin/env node
// Popular PyPI MCP servers, pinned, started as `uvx <pkg>==<version>` directly and through
// `mcp-sandbox run`: the tools each lists, the time to the first `tools/list` on a first start
// (nothing installed: an empty uv cache for the direct start, an empty install cache and pin lock
// for the sandboxed one) and on warm starts (best of two, interleaved), and what each needed.
// Needs PyPI and uv. Not part of `pnpm bench` (minutes of downloads):
// `node bench/popular-python-servers.mjs [--only a,b] [--timeout 300] [--out file.json]`.
// Run it as root and as an ordinary user: as root the sandbox runs as 65534.
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { BIN } from './lib/env.mjs';
import { firstToolsList } from './lib/first-tools-list.mjs';
import { uvPath } from './lib/uv-path.mjs';

/** A git repository with one commit, for mcp-server-git. */
function gitRepo(dir) {
  const git = (...args) =>
    execFileSync('git', ['-c', 'user.name=survey', '-c', 'user.email=survey@example.invalid', ...args], {
      cwd: dir,
      stdio: 'ignore',
    });
  git('init', '-q');
  writeFileSync(join(dir, 'README.md'), '# survey\n');
  git('add', 'README.md');
  git('commit', '-q', '-m', 'first');
}

/**
 * name, uvx arguments ({dir}: a fresh folder), dummy settings the server checks at start, a folder
 * mounted ro or rw, and what it needed beyond `run -- uvx …` (the survey's "needs" column).
 */
const SERVERS = [
  { name: 'time', args: ['mcp-server-time==2026.10.19'], needs: 'nothing' },
  {
    name: 'fetch',
    args: ['mcp-server-fetch==2026.10.24'],
    needs:
      '--allow-net <each host it fetches>; with node on PATH its first fetch runs `npm install` into its own package (refused: read-only)',
  },
  {
    name: 'git',
    args: ['mcp-server-git==2026.10.19', '--repository', '{dir}'],
    mount: 'ro',
    setup: gitRepo,
    needs: '--mount <repo> (ro to read; rw to commit)',
  },
  {
    // Broken on PyPI today, direct as sandboxed: its unpinned `mcp` resolves to 2.x.
    name: 'sqlite',
    args: ['mcp-server-sqlite==2025.4.25', '--db-path', '{dir}/survey.db'],
    mount: 'rw',
    needs: '--mount <folder of the database>:rw',
  },
  {
    name: 'aws-documentation',
    args: ['awslabs.aws-documentation-mcp-server==1.2.3'],
    env: { FASTMCP_LOG_LEVEL: 'ERROR' },
    needs: '--allow-net docs.aws.amazon.com (tool calls only)',
  },
  {
    name: 'atlassian',
    args: ['mcp-atlassian==0.23.1'],
    env: {
      JIRA_URL: 'https://example.atlassian.net',
      JIRA_USERNAME: 'survey@example.invalid',
      JIRA_API_TOKEN: 'x',
    },
    needs: '--env JIRA_URL, JIRA_USERNAME, JIRA_API_TOKEN; --allow-net <site>.atlassian.net (calls)',
  },
  {
    // Downloads its embedding model from Hugging Face at start: unreachable here, either way.
    name: 'qdrant',
    args: ['mcp-server-qdrant==0.8.1'],
    env: { QDRANT_URL: 'http://127.0.0.1:6333', COLLECTION_NAME: 'survey' },
    needs:
      '--env QDRANT_URL, COLLECTION_NAME; --allow-net <qdrant host> and the embedding model download (calls)',
  },
  {
    name: 'arxiv',
    args: ['arxiv-mcp-server==0.8.2'],
    needs: '--allow-net export.arxiv.org, arxiv.org (calls); --state to keep downloaded papers',
  },
  {
    name: 'duckduckgo',
    args: ['duckduckgo-mcp-server==0.7.0'],
    needs: '--allow-net html.duckduckgo.com (calls)',
  },
  {
    // Broken on PyPI today, direct as sandboxed: `mcp` 2.x no longer brings httpx, which it imports.
    name: 'sentry',
    args: ['mcp-server-sentry==2025.1.14', '--auth-token', 'x'],
    needs: 'an auth token argument; --allow-net sentry.io (calls)',
  },
  {
    name: 'motherduck',
    args: ['mcp-server-motherduck==1.1.0', '--db-path', ':memory:', '--read-write'],
    needs: 'nothing for :memory: (--mount a .duckdb file, --allow-net for MotherDuck)',
  },
  { name: 'calculator', args: ['mcp-server-calculator==0.2.1'], needs: 'nothing' },
  { name: 'blender', args: ['blender-mcp==2.0.0'], needs: 'a Blender add-on listening on loopback (calls)' },
  {
    name: 'clickhouse',
    args: ['mcp-clickhouse==0.7.0'],
    env: {
      CLICKHOUSE_HOST: 'clickhouse.example.invalid',
      CLICKHOUSE_USER: 'survey',
      CLICKHOUSE_PASSWORD: 'x',
    },
    needs: '--env CLICKHOUSE_HOST, CLICKHOUSE_USER, CLICKHOUSE_PASSWORD; --allow-net <host> (calls)',
  },
  {
    name: 'youtube-transcript',
    args: ['mcp-youtube-transcript==0.3.5'],
    needs: '--allow-net www.youtube.com (calls)',
  },
  {
    name: 'aws-pricing',
    args: ['awslabs.aws-pricing-mcp-server==1.1.1'],
    env: { FASTMCP_LOG_LEVEL: 'ERROR', AWS_REGION: 'us-east-1' },
    needs: '--env AWS_REGION and AWS credentials; --allow-net api.pricing.us-east-1.amazonaws.com (calls)',
  },
  {
    name: 'tree-sitter',
    args: ['mcp-server-tree-sitter==0.7.0'],
    needs: '--mount <project> (calls)',
  },
];

const { values: flags } = parseArgs({
  options: {
    only: { type: 'string' },
    timeout: { type: 'string', default: '300' },
    out: { type: 'string' },
  },
});
const only = flags.only ? new Set(flags.only.split(',')) : undefined;
const timeoutMs = Number(flags.timeout) * 1000;
const PATH = uvPath();
const root = process.getuid?.() === 0;
/** The user's TLS trust and proxy settings, as a client would pass them (a TLS-inspecting proxy). */
const network = Object.fromEntries(
  Object.entries(process.env).filter(([key]) =>
    /^(SSL_CERT_(FILE|DIR)|NODE_EXTRA_CA_CERTS|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|(HTTPS?|ALL|NO)_PROXY|UV_NATIVE_TLS|UV_SYSTEM_CERTS)$/i.test(
      key,
    ),
  ),
);

const uvxArgs = (server, dir) => server.args.map((a) => a.replaceAll('{dir}', dir));

function sandboxed(server, dir) {
  const options = [];
  for (const key of Object.keys(server.env ?? {})) options.push('--env', key);
  if (server.mount) options.push('--mount', `${dir}:${dir}:${server.mount}`);
  return [process.execPath, BIN, 'run', ...options, '--', 'uvx', ...uvxArgs(server, dir)];
}

const sameTools = (a, b) => !a.error && !b.error && JSON.stringify(a.tools) === JSON.stringify(b.tools);
const best = (a, b) => (a.error ? b : b.error ? a : a.ms <= b.ms ? a : b);

const rows = [];
for (const server of SERVERS) {
  if (only && !only.has(server.name)) continue;
  const home = mkdtempSync(join(tmpdir(), `survey-py-${server.name}-`));
  chmodSync(home, 0o755);
  const dir = join(home, 'files');
  mkdirSync(dir, { mode: 0o755 });
  server.setup?.(dir);
  // As root the sandbox runs as 65534: a rw folder must be its to write.
  if (root && server.mount === 'rw') chownSync(dir, 65534, 65534);
  // A private home: uv's cache, the sandbox's install cache and the pin lock start empty.
  const env = {
    ...network,
    PATH,
    HOME: home,
    XDG_STATE_HOME: join(home, 'state'),
    XDG_CACHE_HOME: join(home, 'cache'),
    UV_CACHE_DIR: join(home, 'uv-cache'),
    UV_PYTHON_DOWNLOADS: 'never',
    MCP_SANDBOX_PIN_LOCK: join(home, 'pins.json'),
    ...server.env,
  };
  const direct = ['uvx', ...uvxArgs(server, dir)];
  const start = (argv) => firstToolsList(argv, { env, cwd: home, timeoutMs });
  process.stderr.write(`[survey] ${server.name}\n`);
  const directCold = await start(direct);
  const sandboxCold = await start(sandboxed(server, dir));
  const directWarm = best(await start(direct), await start(direct));
  const sandboxWarm = best(await start(sandboxed(server, dir)), await start(sandboxed(server, dir)));
  rows.push({
    server: server.name,
    pkg: server.args[0],
    needs: server.needs,
    directCold,
    sandboxCold,
    directWarm,
    sandboxWarm,
  });
  rmSync(home, { recursive: true, force: true });
}

const cell = (r) => (r.error ? r.error : `${(r.ms / 1000).toFixed(2)} s`);
const count = (r) => (r.error ? '-' : String(r.tools.length));
const header = [
  'server (uvx, pinned)',
  'tools direct',
  'tools sandboxed',
  'same',
  'direct first',
  'sandboxed first',
  'direct warm',
  'sandboxed warm',
  'needed',
];
process.stdout.write(`| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|\n`);
for (const r of rows) {
  const tools = r.directWarm.error ? r.directCold : r.directWarm;
  const boxed = r.sandboxWarm.error ? r.sandboxCold : r.sandboxWarm;
  const line = [
    `\`${r.pkg}\``,
    count(tools),
    count(boxed),
    sameTools(tools, boxed) ? 'yes' : 'no',
    cell(r.directCold),
    cell(r.sandboxCold),
    cell(r.directWarm),
    cell(r.sandboxWarm),
    r.needs,
  ];
  process.stdout.write(`| ${line.join(' | ')} |\n`);
}
for (const r of rows) {
  for (const kind of ['directCold', 'sandboxCold', 'directWarm', 'sandboxWarm']) {
    if (r[kind].error)
      process.stderr.write(`[survey] ${r.server} ${kind}: ${r[kind].error}\n${r[kind].stderr}\n`);
  }
}
if (flags.out) writeFileSync(flags.out, `${JSON.stringify(rows, null, 2)}\n`);
