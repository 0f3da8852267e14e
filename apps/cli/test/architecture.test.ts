import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The layering of docs/architecture.md, checked against the code: the table there is the rule.
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const TEST_ONLY = new Set(['@mcpsandbox/backend-fake', '@mcpsandbox/backend-local']);

interface Workspace {
  readonly name: string;
  readonly dir: string;
  readonly runtime: readonly string[];
  readonly dev: readonly string[];
  readonly subpaths: readonly string[];
}

function workspaces(): Workspace[] {
  const dirs = [
    ...readdirSync(join(root, 'packages')).map((d) => join(root, 'packages', d)),
    ...readdirSync(join(root, 'apps')).map((d) => join(root, 'apps', d)),
  ];
  return dirs.flatMap((dir) => {
    let manifest: Record<string, Record<string, string> | string | undefined>;
    try {
      manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    } catch {
      return [];
    }
    const names = (field: string) => Object.keys((manifest[field] as Record<string, string>) ?? {});
    return [
      {
        name: manifest.name as string,
        dir,
        runtime: [...names('dependencies'), ...names('peerDependencies')],
        dev: names('devDependencies'),
        // A subpath the package declares in `exports` is its public API; any other is a deep import.
        subpaths: Object.keys((manifest.exports as Record<string, unknown>) ?? {}).filter((k) => k !== '.'),
      },
    ];
  });
}

function allowedTable(all: readonly string[]): Map<string, Set<string>> {
  const doc = readFileSync(join(root, 'docs/architecture.md'), 'utf8');
  const section = doc.slice(doc.indexOf('### What may import what'));
  const table = new Map<string, Set<string>>();
  for (const line of section.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    const name = /^`([^`]+)`$/.exec(cells[1] ?? '')?.[1];
    if (!name) continue;
    const rule = cells[2] ?? '';
    const allowed = rule.startsWith('every package above')
      ? all.filter((n) => n !== name)
      : [...rule.matchAll(/`([^`]+)`/g)].map((m) => m[1] as string);
    table.set(name, new Set(allowed));
  }
  return table;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sourceFiles(path);
    return /\.(ts|mts)$/.test(entry.name) && !/\.test\.ts$/.test(entry.name) ? [path] : [];
  });
}

const IMPORT =
  /(?:^|\n)\s*(?:import|export)\b[^'"]*?\bfrom\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

function specifiers(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(IMPORT)].map((m) => (m[1] ?? m[2]) as string);
}

function workspaceName(specifier: string, names: ReadonlySet<string>): string | undefined {
  const parts = specifier.split('/');
  const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] as string);
  return names.has(name) ? name : undefined;
}

function declaredSubpath(specifier: string, target: string, packages: readonly Workspace[]): boolean {
  const subpath = `.${specifier.slice(target.length)}`;
  return packages.find((p) => p.name === target)?.subpaths.includes(subpath) ?? false;
}

function cycles(srcDir: string): string[] {
  const files = sourceFiles(srcDir);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const local = specifiers(file).filter((s) => s.startsWith('.'));
    graph.set(
      file,
      local.map((s) => resolve(dirname(file), s.replace(/\.js$/, '.ts'))),
    );
  }
  const found: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string): void => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') {
        const circle = [...stack.slice(stack.indexOf(next)), next];
        found.push(circle.map((f) => relative(srcDir, f)).join(' → '));
      } else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node);
  return found;
}

describe('the package layering of docs/architecture.md', () => {
  const packages = workspaces();
  const names = new Set(packages.map((p) => p.name));
  const table = allowedTable([...names]);

  it('gives every workspace package a row', () => {
    expect([...names].filter((n) => !table.has(n))).toEqual([]);
    expect([...table.keys()].filter((n) => !names.has(n))).toEqual([]);
  });

  for (const pkg of packages) {
    it(`${pkg.name} imports only what its row allows`, () => {
      const allowed = table.get(pkg.name) ?? new Set<string>();
      const violations: string[] = [];
      for (const dep of pkg.runtime) {
        if (names.has(dep) && !allowed.has(dep)) violations.push(`package.json depends on ${dep}`);
      }
      for (const dep of pkg.dev) {
        if (names.has(dep) && !allowed.has(dep) && !TEST_ONLY.has(dep)) {
          violations.push(`package.json devDependencies has ${dep}`);
        }
      }
      for (const file of sourceFiles(join(pkg.dir, 'src'))) {
        for (const specifier of specifiers(file)) {
          const target = workspaceName(specifier, names);
          if (!target || target === pkg.name) continue;
          if (!allowed.has(target)) violations.push(`${relative(root, file)} imports ${specifier}`);
          else if (specifier !== target && !declaredSubpath(specifier, target, packages))
            violations.push(`${relative(root, file)} deep-imports ${specifier}`);
        }
      }
      expect(violations).toEqual([]);
    });

    it(`${pkg.name} has no import circle among its own modules`, () => {
      expect(cycles(join(pkg.dir, 'src'))).toEqual([]);
    });
  }

  it('catches a violation (the check itself can fail)', () => {
    const core = table.get('@mcpsandbox/core');
    expect(core?.has('@mcpsandbox/backend-local')).toBe(false);
    expect(workspaceName('@mcpsandbox/backend-local/dist/x.js', names)).toBe('@mcpsandbox/backend-local');
    const local = '@mcpsandbox/backend-local';
    expect(declaredSubpath(`${local}/dist/none.js`, local, packages)).toBe(false);
    expect(declaredSubpath(`${local}/none`, local, packages)).toBe(true);
  });
});
