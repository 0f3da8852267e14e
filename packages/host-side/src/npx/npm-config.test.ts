import { execFileSync } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { HostNpmConfig } from '../install-job.js';
import { npmConfigInputs } from './npm-config-inputs.js';

// The host's real npm, with a home of its own; a module node preloads counts its runs, which is
// how these tests see whether a start ran npm or answered from the store.
const base = mkdtempSync(join(tmpdir(), 'mcpsandbox-npm-config-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

let n = 0;
interface Place {
  readonly home: string;
  readonly project: string;
  readonly cacheRoot: string;
  readonly env: Record<string, string | undefined>;
}

function place(): Place {
  const root = join(base, String(n++));
  const home = join(root, 'home');
  const project = join(root, 'work', 'project');
  const cacheRoot = join(root, 'cache');
  for (const dir of [home, project]) mkdirSync(dir, { recursive: true });
  mkdirSync(cacheRoot, { mode: 0o700 });
  const counter = join(root, 'count-runs.cjs');
  const runs = JSON.stringify(join(root, 'npm-runs'));
  writeFileSync(counter, `require('node:fs').appendFileSync(${runs}, 'run\\n');\n`);
  const env = { PATH: process.env.PATH, HOME: home, NODE_OPTIONS: `--require ${counter}` };
  return { home, project, cacheRoot, env };
}

/** hostNpmConfig as a new process sees it: a fresh module, nothing remembered in memory. */
async function ask(p: Place, cwd = p.project, env = p.env, projectNpmrc = false): Promise<HostNpmConfig> {
  vi.resetModules();
  const { hostNpmConfig } = await import('./npm-config.js');
  return hostNpmConfig({ cacheRoot: p.cacheRoot, hostEnv: env, projectNpmrc }, cwd);
}

const askProject = (p: Place, cwd = p.project) => ask(p, cwd, p.env, true);

function npmRuns(p: Place): number {
  try {
    return readFileSync(join(p.home, '..', 'npm-runs'), 'utf8')
      .split('\n')
      .filter(Boolean).length;
  } catch {
    return 0;
  }
}

const REGISTRY = 'https://registry.npmjs.org/';
const OTHER = 'https://registry.example.test/';

describe('the host npm config, kept between starts', () => {
  beforeEach(() => {
    vi.resetModules();
  });

  it('answers a start whose inputs are unchanged from the store, without running npm', async () => {
    const p = place();
    expect((await ask(p)).registry).toBe(REGISTRY);
    expect(npmRuns(p)).toBe(1);
    expect(readdirSync(p.cacheRoot)).toContain('npm-config.json');
    expect((await ask(p)).registry).toBe(REGISTRY);
    expect(npmRuns(p)).toBe(1);
  });

  it('asks npm again when the user config changes', async () => {
    const p = place();
    await ask(p);
    writeFileSync(join(p.home, '.npmrc'), `registry=${OTHER}\n`);
    expect((await ask(p)).registry).toBe(OTHER);
    expect(npmRuns(p)).toBe(2);
  });

  it("never takes a project's .npmrc (a sandbox may have written it), nor runs npm again for it", async () => {
    const p = place();
    await ask(p);
    writeFileSync(
      join(p.project, '.npmrc'),
      `registry=${OTHER}\ncache=${p.project}/c\nuserconfig=${p.project}/u\nstrict-ssl=false\n`,
    );
    const answer = await ask(p);
    expect(answer).toMatchObject({ registry: REGISTRY, strictSsl: true, cache: join(p.home, '.npm') });
    expect(npmRuns(p)).toBe(1);
    // Even asked afresh (no store): npm itself skips the project's config.
    rmSync(join(p.cacheRoot, 'npm-config.json'));
    expect((await ask(p)).registry).toBe(REGISTRY);
    expect(npmRuns(p)).toBe(2);
  });

  it('with --project-npmrc, takes the project .npmrc and names the file the registry came from', async () => {
    const p = place();
    writeFileSync(join(p.project, '.npmrc'), `registry=${OTHER}\n`);
    expect(await askProject(p)).toMatchObject({ registry: OTHER, registrySource: join(p.project, '.npmrc') });
    // The user's own registry is named as such.
    writeFileSync(join(p.project, '.npmrc'), 'fund=false\n');
    expect(await askProject(p)).toMatchObject({
      registry: REGISTRY,
      registrySource: 'your own npm configuration',
    });
  });

  it('with --project-npmrc, follows the project npm finds (a package.json appears below it)', async () => {
    const p = place();
    const outer = join(p.project, '..');
    writeFileSync(join(outer, 'package.json'), '{"name":"outer"}');
    writeFileSync(join(outer, '.npmrc'), `registry=${OTHER}\n`);
    expect((await askProject(p)).registry).toBe(OTHER);
    // The project is now the working directory, which has no .npmrc: the default registry.
    writeFileSync(join(p.project, 'package.json'), '{"name":"inner"}');
    expect((await askProject(p)).registry).toBe(REGISTRY);
  });

  it('asks npm again when a variable that npm reads, or that a config file names, changes', async () => {
    const p = place();
    // biome-ignore lint/suspicious/noTemplateCurlyInString: npm's own variable syntax, not a template
    writeFileSync(join(p.home, '.npmrc'), 'registry=${MY_TEST_REGISTRY}\n');
    const first = { ...p.env, MY_TEST_REGISTRY: 'https://one.example.test/' };
    expect((await ask(p, p.project, first)).registry).toBe('https://one.example.test/');
    const second = { ...p.env, MY_TEST_REGISTRY: 'https://two.example.test/' };
    expect((await ask(p, p.project, second)).registry).toBe('https://two.example.test/');
    const third = { ...second, npm_config_registry: OTHER };
    expect((await ask(p, p.project, third)).registry).toBe(OTHER);
    expect(npmRuns(p)).toBe(3);
  });

  it('keeps no answer when npm read a config file outside the inputs (a moved global config)', async () => {
    const p = place();
    const global = join(p.home, 'elsewhere-npmrc');
    writeFileSync(global, `registry=${OTHER}\n`);
    writeFileSync(join(p.home, '.npmrc'), `globalconfig=${global}\n`);
    expect((await ask(p)).registry).toBe(OTHER);
    writeFileSync(global, 'registry=https://three.example.test/\n');
    expect((await ask(p)).registry).toBe('https://three.example.test/');
    expect(npmRuns(p)).toBe(2);
  });

  it('ignores a store that is a symlink or does not validate, and asks npm', async () => {
    const p = place();
    const store = join(p.cacheRoot, 'npm-config.json');
    await ask(p);
    const real = JSON.parse(readFileSync(store, 'utf8'));
    const forged = { registry: 'https://attacker.example.test/', strictSsl: false };
    const withAnswer = (answer: object) =>
      JSON.stringify({ ...real, records: [{ ...real.records[0], answer }] });
    const planted = join(p.home, 'planted.json');
    writeFileSync(planted, withAnswer(forged));
    unlinkSync(store);
    symlinkSync(planted, store);
    expect((await ask(p)).registry).toBe(REGISTRY);
    expect(npmRuns(p)).toBe(2);
    // Control: the same record in the store's own file is taken (the symlink was what was refused).
    writeFileSync(store, withAnswer(forged), { mode: 0o600 });
    expect((await ask(p)).registry).toBe(forged.registry);
    expect(npmRuns(p)).toBe(2);
    writeFileSync(store, withAnswer({ ...forged, registry: 'file:///etc/' }), { mode: 0o600 });
    expect((await ask(p)).registry).toBe(REGISTRY);
    expect(npmRuns(p)).toBe(3);
  });
});

describe('npmConfigInputs', () => {
  it('is unknown (never answered from the store) when a config file is a FIFO, without blocking', () => {
    const p = place();
    const salt = '0'.repeat(32);
    expect(npmConfigInputs(p.env, p.project, salt, true)).toBeDefined();
    execFileSync('mkfifo', [join(p.project, '.npmrc')]);
    expect(npmConfigInputs(p.env, p.project, salt, true)).toBeUndefined();
    // Without --project-npmrc the project's files are no input at all.
    expect(npmConfigInputs(p.env, p.project, salt)).toBeDefined();
    execFileSync('mkfifo', [join(p.home, '.npmrc')]);
    expect(npmConfigInputs(p.env, p.project, salt)).toBeUndefined();
  });

  it('names every config file npm may load, and changes with each of them', () => {
    const p = place();
    const salt = '0'.repeat(32);
    const before = npmConfigInputs(p.env, p.project, salt, true);
    expect(before?.files).toContain(join(p.home, '.npmrc'));
    expect(before?.files).toContain(join(p.project, '.npmrc'));
    expect(before?.files).toContain(join(p.project, 'package.json'));
    mkdirSync(join(p.project, 'node_modules'));
    const after = npmConfigInputs(p.env, p.project, salt, true);
    expect(after?.digest).not.toBe(before?.digest);
    expect(npmConfigInputs(p.env, p.project, '1'.repeat(32), true)?.digest).not.toBe(after?.digest);
    const own = npmConfigInputs(p.env, p.project, salt);
    expect(own?.files).toContain(join(p.home, '.npmrc'));
    expect(own?.files).not.toContain(join(p.project, '.npmrc'));
  });
});
