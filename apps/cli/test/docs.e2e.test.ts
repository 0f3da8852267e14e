import { spawn } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import {
  consoleSteps,
  type DocBlock,
  extractBlocks,
  isProgressLine,
  mismatch,
  normalise,
} from './docs-blocks.js';
import { DOC_FIXTURES, type FixtureContext } from './docs-fixtures.js';

/**
 * The docs are true: every fenced block of README.md, docs/*.md, packages/*\/README.md and
 * apps/cli/README.md is run (console, sh), typechecked (ts, js) or marked illustrative with its
 * reason. The rules for writers are in docs-blocks.ts.
 *
 * `mcp-sandbox` in a block is this build, laid out as npm installs it (node_modules/mcp-sandbox,
 * so `wrap` writes what a published install writes), run with a temporary HOME and XDG dirs
 * and a private pin lock. One HOME serves every block, so each npx server installs once.
 */
const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const APP = join(REPO, 'apps/cli');
const DOC_FILES = [
  'README.md',
  ...readdirSync(join(REPO, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
  ...readdirSync(join(REPO, 'packages'))
    .sort()
    .map((p) => `packages/${p}/README.md`)
    .filter((f) => readdirSync(join(REPO, f, '..')).includes('README.md')),
  'apps/cli/README.md',
];
const BLOCKS = DOC_FILES.flatMap((f) => extractBlocks(REPO, f));

const root = mkdtempSync(join(tmpdir(), 'docs-e2e-'));
chmodSync(root, 0o755);
afterAll(() => rmSync(root, { recursive: true, force: true }));

const home = join(root, 'home');
const cwd = join(home, 'project');
const env = setUp();

function setUp(): Record<string, string> {
  const installed = join(root, 'lib/node_modules/mcp-sandbox');
  mkdirSync(installed, { recursive: true });
  cpSync(join(APP, 'dist'), join(installed, 'dist'), { recursive: true });
  cpSync(join(APP, 'package.json'), join(installed, 'package.json'));
  symlinkSync(join(APP, 'node_modules'), join(installed, 'node_modules'));
  // What npm records for a package it installed from the registry: `wrap` then writes the npx
  // launcher of the published package, as it would for `npm install -g mcp-sandbox@<version>`.
  const { version } = JSON.parse(readFileSync(join(APP, 'package.json'), 'utf8')) as { version: string };
  const integrity = `sha512-${Buffer.alloc(64, 7).toString('base64')}`;
  const resolved = `https://registry.npmjs.org/mcp-sandbox/-/mcp-sandbox-${version}.tgz`;
  writeFileSync(
    join(root, 'lib/node_modules/.package-lock.json'),
    JSON.stringify({
      name: 'lib',
      lockfileVersion: 3,
      packages: { 'node_modules/mcp-sandbox': { version, resolved, integrity } },
    }),
  );
  mkdirSync(join(root, 'bin'));
  const bin = join(root, 'bin/mcp-sandbox');
  writeFileSync(bin, `#!/bin/sh\nexec '${process.execPath}' '${join(installed, 'dist/bin.js')}' "$@"\n`);
  chmodSync(bin, 0o755);
  mkdirSync(cwd, { recursive: true });
  return {
    PATH: `${join(root, 'bin')}:${process.env.PATH ?? '/usr/bin:/bin'}`,
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_STATE_HOME: join(home, '.local/state'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_DATA_HOME: join(home, '.local/share'),
    MCP_SANDBOX_PIN_LOCK: join(root, 'npx-lock.json'),
    LANG: 'C.UTF-8',
  };
}

const where = (b: DocBlock) => `${b.file}:${b.line}`;

const HOW_TO_FIX =
  'make it a `console` block (`$ ` lines are commands, the lines after each are the output they print) or a `sh` block of commands that succeed, ' +
  'or put `<!-- illustrative: <why it cannot run here> -->` on the line before its fence (see apps/cli/test/docs-blocks.ts)';

interface Shell {
  code: number | null;
  output: string;
}

function sh(script: string, extraEnv: Record<string, string> = {}, timeoutMs = 150_000): Promise<Shell> {
  return new Promise((resolve) => {
    const child = spawn('sh', ['-c', `{\n${script}\n} 2>&1`], {
      cwd,
      env: { ...env, ...extraEnv },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => {
      output += c.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

const fixtureContext: FixtureContext = { cwd, home, env, bin: join(root, 'bin/mcp-sandbox') };

async function runFixture(block: DocBlock): Promise<void> {
  if (block.marker?.kind !== 'fixture') return;
  const fixture = DOC_FIXTURES[block.marker.name];
  if (!fixture) {
    throw new Error(
      `${where(block)}: <!-- docs-test: ${block.marker.name} --> names no fixture; known: ${Object.keys(DOC_FIXTURES).join(', ')} (apps/cli/test/docs-fixtures.ts)`,
    );
  }
  await fixture(fixtureContext);
}

async function runConsole(block: DocBlock): Promise<void> {
  const steps = consoleSteps(block.body);
  if (steps.length === 0)
    throw new Error(`${where(block)}: a console block with no \`$ \` line; ${HOW_TO_FIX}`);
  for (const step of steps) {
    const { output } = await sh(step.command);
    const shown = step.expected.some(isProgressLine);
    const actual = normalise(output, home)
      .split('\n')
      .filter((l) => shown || !isProgressLine(l));
    const expected = normalise(step.expected.join('\n'), home).split('\n');
    const wrong = mismatch(expected, actual);
    if (wrong) {
      throw new Error(
        `${where(block)}: \`$ ${step.command}\` printed other output than the docs show: ${wrong}\n` +
          `--- printed (normalised) ---\n${actual.join('\n')}\n--- fix the block, or mark it illustrative if it cannot run here`,
      );
    }
  }
}

async function runSh(block: DocBlock): Promise<void> {
  const { code, output } = await sh(`set -e\n${block.body}`);
  if (code !== 0) {
    throw new Error(`${where(block)}: this sh block exited ${code}:\n${output}\n--- ${HOW_TO_FIX}`);
  }
}

const RUN: Record<string, (b: DocBlock) => Promise<void>> = { console: runConsole, sh: runSh };
const TYPED = new Set(['ts', 'js']);

describe('the docs are true', () => {
  it('every block is run, typechecked or marked illustrative with a reason', () => {
    const problems = BLOCKS.flatMap((b) => {
      if (b.badMarker) {
        return [
          `${where(b)}: ${b.badMarker} is not a marker: write <!-- illustrative: <why> --> or <!-- docs-test: <fixture> -->`,
        ];
      }
      if (b.marker || RUN[b.lang] || TYPED.has(b.lang)) return [];
      return [`${where(b)}: this \`${b.lang || 'plain'}\` block is neither run nor marked: ${HOW_TO_FIX}`];
    });
    expect(problems, problems.join('\n')).toEqual([]);
    // The check reads the docs it means to: a count that drops to zero would pass anything.
    expect(BLOCKS.length).toBeGreaterThan(40);
  });

  for (const block of BLOCKS) {
    const run = RUN[block.lang];
    if (block.marker?.kind === 'illustrative' || !run) continue;
    it(`${where(block)} (${block.lang}) prints what it shows`, { timeout: 300_000 }, async () => {
      await runFixture(block);
      await run(block);
    });
  }

  it('ts and js blocks typecheck against the built packages', { timeout: 60_000 }, () => {
    const typed = BLOCKS.filter((b) => TYPED.has(b.lang) && b.marker?.kind !== 'illustrative');
    expect(typed.length).toBeGreaterThan(5);
    const problems = typecheck(typed);
    expect(problems, problems.join('\n')).toEqual([]);
  });
});

/** Each block is a module of its own, resolved as a user's project resolves the packages. */
function typecheck(blocks: readonly DocBlock[]): string[] {
  const dir = join(root, 'typecheck');
  mkdirSync(dir);
  symlinkSync(join(APP, 'node_modules'), join(dir, 'node_modules'));
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
  const files = new Map<string, DocBlock>();
  blocks.forEach((b, i) => {
    const file = join(dir, `block-${i}.${b.lang}`);
    writeFileSync(file, `${b.body}\nexport {};\n`);
    files.set(file, b);
  });
  const options: ts.CompilerOptions = {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    allowJs: true,
    checkJs: true,
    types: ['node'],
  };
  const names = [...files.keys()];
  // TypeScript blocks under strict; JavaScript blocks as a JS user writes them, without annotations.
  const diagnostics = [
    ...ts.getPreEmitDiagnostics(
      ts.createProgram(
        names.filter((n) => n.endsWith('.ts')),
        options,
      ),
    ),
    ...ts.getPreEmitDiagnostics(
      ts.createProgram(
        names.filter((n) => n.endsWith('.js')),
        { ...options, noImplicitAny: false },
      ),
    ),
  ];
  return diagnostics.map((d) => {
    const block = d.file ? files.get(d.file.fileName) : undefined;
    const message = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    if (!block || !d.file || d.start === undefined) return message;
    const { line } = d.file.getLineAndCharacterOfPosition(d.start);
    return `${block.file}:${block.line + 1 + line}: ${message} (fix the block, or mark it illustrative)`;
  });
}
