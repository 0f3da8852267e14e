/**
 * The withheld-variable hint reads what a Python server prints when a variable is missing: the
 * `KeyError: 'X'` of `os.environ['X']`, its own message after `os.getenv`, and pydantic-settings'
 * "Field required" under a field name (lower case, and without the `env_prefix`). Real Python
 * processes in the real sandbox, with pydantic-settings from PyPI (pinned) in a venv the test makes.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnBin } from './helpers.js';

const PYDANTIC_SETTINGS = 'pydantic-settings==2.14.1';
const PYTHON = '/usr/bin/python3';
const HINT = 'mcp-sandbox: warning: the server asked for';
const root = mkdtempSync(join(tmpdir(), 'mcpsandbox-withheld-py-'));
chmodSync(root, 0o755);
const venv = join(root, 'venv');
const server = join(root, 'server.py');

const SERVER = `
import os, sys
mode = sys.argv[1]
if mode == "keyerror":
    token = os.environ["JIRA_API_TOKEN"]
elif mode == "getenv":
    if not os.getenv("BRAVE_API_KEY"):
        sys.exit("Error: BRAVE_API_KEY is not set")
elif mode == "environ-get":
    url = os.environ.get("CONFLUENCE_URL") or sys.exit("missing required setting")
elif mode == "settings":
    from pydantic_settings import BaseSettings
    class Settings(BaseSettings):
        jira_url: str
        jira_api_token: str
    Settings()
elif mode == "prefixed":
    from pydantic_settings import BaseSettings, SettingsConfigDict
    class Settings(BaseSettings):
        model_config = SettingsConfigDict(env_prefix="BRAVE_")
        api_key: str
    Settings()
`;

beforeAll(() => {
  writeFileSync(server, SERVER);
  const env = { ...process.env, UV_CACHE_DIR: join(root, 'uv-cache'), UV_PYTHON_DOWNLOADS: 'never' };
  execFileSync('uv', ['venv', '--quiet', '--python', PYTHON, venv], { env, cwd: root, stdio: 'ignore' });
  execFileSync(
    'uv',
    ['pip', 'install', '--quiet', '--python', join(venv, 'bin', 'python'), PYDANTIC_SETTINGS],
    {
      env,
      cwd: root,
      stdio: 'ignore',
      timeout: 120_000,
    },
  );
  execFileSync('chmod', ['-R', 'a+rX', root]);
}, 180_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** As a client starts it: the config's variables in mcp-sandbox's environment. */
async function runServer(mode: string, vars: Record<string, string>, runArgs: string[] = []) {
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/', ...vars };
  const run = spawnBin(
    ['run', '--mount', `${root}:ro`, ...runArgs, '--', join(venv, 'bin', 'python'), server, mode],
    env,
  );
  // Stdin stays open, as a client's does, until the server has exited.
  const result = await run.result;
  run.child.stdin.destroy();
  return { ...result, hints: result.stderr.split('\n').filter((l) => l.startsWith(HINT)) };
}

const hint = (name: string) => `${HINT} ${name}, which was withheld: pass it with --env ${name}`;
/** A token of an API whose host is known: on local the hint offers --secret first (known-secrets.ts). */
const secretHint = (name: string, host: string) =>
  `${HINT} ${name}, which was withheld: pass it with --secret ${name}@${host} --allow-net ${host} ` +
  `(the server gets a stand-in, the real value goes only to ${host}), or with --env ${name}`;

describe('a withheld variable a Python server asks for', () => {
  it("os.environ['X']: the KeyError names it", async () => {
    const r = await runServer('keyerror', { JIRA_API_TOKEN: 'jira-value-1' });
    expect(r.stderr).toContain("KeyError: 'JIRA_API_TOKEN'");
    expect(r.hints).toEqual([hint('JIRA_API_TOKEN')]);
    expect(r.stderr).not.toContain('jira-value-1');
  });

  it("os.getenv / os.environ.get: the server's own message names it; no message, no hint", async () => {
    expect((await runServer('getenv', { BRAVE_API_KEY: 'b' })).hints).toEqual([
      secretHint('BRAVE_API_KEY', 'api.search.brave.com'),
    ]);
    // No message names it, but the call does: Python prints no traceback for sys.exit, so nothing.
    expect((await runServer('environ-get', { CONFLUENCE_URL: 'c' })).hints).toEqual([]);
  });

  it('pydantic-settings "Field required": the lower-case field names the variable', async () => {
    const r = await runServer('settings', { JIRA_URL: 'u', JIRA_API_TOKEN: 't', OTHER_URL: 'o' });
    expect(r.stderr).toMatch(/^\[sandbox\] jira_url\n\[sandbox\] {3}Field required \[type=missing/m);
    expect(r.hints).toEqual([hint('JIRA_URL'), hint('JIRA_API_TOKEN')]);
  });

  it('pydantic-settings with an env_prefix: the one withheld name ending in the field, else none', async () => {
    const one = await runServer('prefixed', { BRAVE_API_KEY: 'b', JIRA_URL: 'u' });
    expect(one.stderr).toMatch(/^\[sandbox\] api_key\n\[sandbox\] {3}Field required/m);
    expect(one.hints).toEqual([secretHint('BRAVE_API_KEY', 'api.search.brave.com')]);
    // Two names end in _API_KEY: a guess could send the wrong secret into the sandbox; none is said.
    const two = await runServer('prefixed', { BRAVE_API_KEY: 'b', OPENAI_API_KEY: 'o' });
    expect(two.stderr).toMatch(/^\[sandbox\] api_key\n\[sandbox\] {3}Field required/m);
    expect(two.hints).toEqual([]);
  });

  it('control: passed with --env, the server starts past it and nothing is hinted', async () => {
    const r = await runServer('settings', { JIRA_URL: 'u', JIRA_API_TOKEN: 't' }, [
      '--env',
      'JIRA_URL',
      '--env',
      'JIRA_API_TOKEN',
    ]);
    expect(r.code).toBe(0);
    expect(r.hints).toEqual([]);
  });
});
