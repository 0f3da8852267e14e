#!/usr/bin/env node
// Popular npm MCP servers, direct and through `mcp-sandbox run`: how many tools each lists and the
// time to the first `tools/list`, on a first start (nothing installed anywhere), a first sandboxed
// start with the user's npm cache already holding the package, and warm starts.
// Needs the npm registry. Not part of `pnpm bench` (minutes of downloads): `node bench/popular-servers.mjs
// [--set first|second] [--only a,b]`. Run it as root and as an ordinary user: root's installs run as 65534.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { firstToolsList as firstToolsListShared } from './lib/first-tools-list.mjs';

const ROOT = resolve(fileURLToPath(import.meta.url), '../..');
const BIN = join(ROOT, 'apps', 'cli', 'dist', 'bin.js');

/** name, npx arguments, dummy credentials the server checks at start, run options. */
const FIRST_SURVEY = [
  { name: 'everything', args: ['@modelcontextprotocol/server-everything'] },
  { name: 'memory', args: ['@modelcontextprotocol/server-memory'] },
  { name: 'filesystem', args: ['@modelcontextprotocol/server-filesystem', '{dir}'], mount: true },
  { name: 'sequential-thinking', args: ['@modelcontextprotocol/server-sequential-thinking'] },
  {
    name: 'github',
    args: ['@modelcontextprotocol/server-github'],
    env: { GITHUB_PERSONAL_ACCESS_TOKEN: 'x' },
  },
  { name: 'brave-search', args: ['@modelcontextprotocol/server-brave-search'], env: { BRAVE_API_KEY: 'x' } },
  { name: 'context7', args: ['@upstash/context7-mcp'] },
  { name: 'kubernetes', args: ['mcp-server-kubernetes'] },
  { name: 'playwright', args: ['@playwright/mcp'] },
  { name: 'tavily', args: ['tavily-mcp'], env: { TAVILY_API_KEY: 'x' } },
  { name: 'firecrawl', args: ['firecrawl-mcp'], env: { FIRECRAWL_API_KEY: 'x' } },
  { name: 'notion', args: ['@notionhq/notion-mcp-server'] },
];

/** Servers the first survey did not try, pinned (`--set second`): the "ten not tried before". */
const SECOND_SURVEY = [
  {
    name: 'slack',
    args: ['@modelcontextprotocol/server-slack@2025.4.25'],
    env: { SLACK_BOT_TOKEN: 'xoxb-0', SLACK_TEAM_ID: 'T0' },
  },
  {
    name: 'gitlab',
    args: ['@modelcontextprotocol/server-gitlab@2025.4.25'],
    env: { GITLAB_PERSONAL_ACCESS_TOKEN: 'x' },
  },
  {
    name: 'google-maps',
    args: ['@modelcontextprotocol/server-google-maps@0.6.2'],
    env: { GOOGLE_MAPS_API_KEY: 'x' },
  },
  { name: 'postgres', args: ['@modelcontextprotocol/server-postgres@0.6.2', 'postgresql://localhost/x'] },
  { name: 'exa', args: ['exa-mcp-server@3.4.1'], env: { EXA_API_KEY: 'x' } },
  { name: 'figma', args: ['figma-developer-mcp@0.13.2', '--stdio'], env: { FIGMA_API_KEY: 'x' } },
  { name: 'code-runner', args: ['mcp-server-code-runner@0.1.8'] },
  { name: 'airbnb', args: ['@openbnb/mcp-server-airbnb@0.3.0'] },
  { name: 'youtube-transcript', args: ['@kimtaeyoon83/mcp-server-youtube-transcript@0.1.1'] },
  { name: 'desktop-commander', args: ['@wonderwhy-er/desktop-commander@0.2.52'] },
  {
    name: 'aws-kb-retrieval',
    args: ['@modelcontextprotocol/server-aws-kb-retrieval@0.6.2'],
    env: { AWS_ACCESS_KEY_ID: 'x', AWS_SECRET_ACCESS_KEY: 'x', AWS_REGION: 'us-east-1' },
  },
  { name: 'supabase', args: ['@supabase/mcp-server-supabase@0.13.0'], env: { SUPABASE_ACCESS_TOKEN: 'x' } },
  // An optional native dependency (ssh2's cpu-features, built from source at install).
  { name: 'ssh', args: ['ssh-mcp@2.11.0', '--', '--host=127.0.0.1', '--user=nobody'] },
];

const { values: flags } = parseArgs({
  options: {
    only: { type: 'string' },
    set: { type: 'string', default: 'first' },
    timeout: { type: 'string', default: '180' },
    out: { type: 'string' },
  },
});
const SETS = { first: FIRST_SURVEY, second: SECOND_SURVEY };
if (!Object.hasOwn(SETS, flags.set)) {
  process.stderr.write(`--set ${flags.set}: choose one of ${Object.keys(SETS).join(', ')}\n`);
  process.exit(2);
}
const SERVERS = SETS[flags.set];
const only = flags.only ? new Set(flags.only.split(',')) : undefined;
const TIMEOUT_MS = Number(flags.timeout) * 1000;

/** One start: the tool count and the time to the tools/list answer (the shared survey client). */
async function firstToolsList(argv, env) {
  const result = await firstToolsListShared(argv, { env, timeoutMs: TIMEOUT_MS });
  return result.error ? result : { ...result, tools: result.tools.length };
}

function npxArgs(server, dir) {
  return server.args.map((a) => (a === '{dir}' ? dir : a));
}

function sandboxed(server, dir) {
  const options = [];
  for (const key of Object.keys(server.env ?? {})) options.push('--env', key);
  if (server.mount) options.push('--mount', `${dir}:${dir}:rw`);
  return [process.execPath, BIN, 'run', ...options, '--', 'npx', '-y', ...npxArgs(server, dir)];
}

const rows = [];
for (const server of SERVERS) {
  if (only && !only.has(server.name)) continue;
  const home = mkdtempSync(join(tmpdir(), `survey-${server.name}-`));
  const dir = join(home, 'files');
  mkdirSync(dir);
  // A private home: its npm cache, the sandbox's install cache and the pin lock start empty.
  const env = {
    PATH: process.env.PATH,
    HOME: home,
    XDG_STATE_HOME: join(home, 'state'),
    XDG_CACHE_HOME: join(home, 'cache'),
    npm_config_cache: join(home, '.npm'),
    MCP_SANDBOX_PIN_LOCK: join(home, 'npx-lock.json'),
    ...server.env,
  };
  const direct = ['npx', '-y', ...npxArgs(server, dir)];
  process.stderr.write(`[survey] ${server.name}\n`);
  // Order: sandboxed first start with nothing anywhere; then direct first start (npm's cache empty
  // again); a sandboxed first start whose user cache now holds it; then warm starts of each.
  const sandboxCold = await firstToolsList(sandboxed(server, dir), env);
  rmSync(join(home, '.npm'), { recursive: true, force: true });
  const directCold = await firstToolsList(direct, env);
  rmSync(join(home, 'cache'), { recursive: true, force: true });
  rmSync(join(home, 'state'), { recursive: true, force: true });
  rmSync(join(home, 'npx-lock.json'), { force: true });
  const sandboxCached = await firstToolsList(sandboxed(server, dir), env);
  const directWarm = await firstToolsList(direct, env);
  const sandboxWarm = await firstToolsList(sandboxed(server, dir), env);
  rows.push({ server: server.name, directCold, directWarm, sandboxCold, sandboxCached, sandboxWarm });
  rmSync(home, { recursive: true, force: true });
}

const cell = (r) => (r.error ? r.error : `${(r.ms / 1000).toFixed(2)} s`);
const tools = (r) => (r.error ? '-' : String(r.tools));
const header = [
  'server',
  'tools direct',
  'tools sandboxed',
  'direct first',
  'sandboxed first',
  'sandboxed, npm cache warm',
  'direct warm',
  'sandboxed warm',
];
const lines = [
  header,
  ...rows.map((r) => [
    r.server,
    tools(r.directWarm),
    tools(r.sandboxWarm),
    cell(r.directCold),
    cell(r.sandboxCold),
    cell(r.sandboxCached),
    cell(r.directWarm),
    cell(r.sandboxWarm),
  ]),
];
process.stdout.write(`| ${lines[0].join(' | ')} |\n|${lines[0].map(() => '---').join('|')}|\n`);
for (const line of lines.slice(1)) process.stdout.write(`| ${line.join(' | ')} |\n`);
for (const r of rows) {
  for (const [kind, result] of Object.entries(r)) {
    if (kind !== 'server' && result.error)
      process.stderr.write(`[survey] ${r.server} ${kind}: ${result.error}\n${result.stderr}\n`);
  }
}
if (flags.out) writeFileSync(flags.out, JSON.stringify(rows, null, 2));
