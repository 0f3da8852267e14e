// Builds the published binary: the workspace's @mcpsandbox/* code (their built dist) bundled into
// dist/, so the app installs from its own tarball alone; third-party packages stay real
// dependencies. One file holds what every start needs (commander, every command's options and
// help, and `run`); each backend (and the e2b SDK, the vm sandbox) and each other command's code
// stays a chunk loaded only when chosen. `tsc -b` has typechecked the sources already.
// Two small pure-JS packages every session loads are bundled too: Node's CommonJS loader costs
// a start more than their code does (commander about 8 ms, dns-packet about 20 ms, measured).
import { chmodSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rolldown } from 'rolldown';

const APP = join(dirname(fileURLToPath(import.meta.url)), '..');
const DIST = join(APP, 'dist');
const WORKSPACE_SCOPE = '@mcpsandbox/';
const pkg = JSON.parse(readFileSync(join(APP, 'package.json'), 'utf8'));

const packageName = (specifier) =>
  specifier.startsWith('@') ? specifier.split('/', 2).join('/') : specifier.split('/', 1)[0];
const isBuiltin = (specifier) =>
  specifier.startsWith('node:') || builtinModules.includes(specifier.split('/', 1)[0]);

/** Third-party packages bundled, with what they pull in; each is a devDependency of the app. */
const BUNDLED = new Set(['commander', 'dns-packet', '@leichtgewicht/ip-codec']);

/** Bare specifiers outside the workspace are left as imports; each must be a dependency. */
const external = (specifier) =>
  !BUNDLED.has(packageName(specifier)) &&
  !specifier.startsWith('.') &&
  !specifier.startsWith('/') &&
  !specifier.startsWith('\0') &&
  !specifier.startsWith(WORKSPACE_SCOPE) &&
  !isBuiltin(specifier) &&
  /^[@a-z0-9]/i.test(specifier);

// Chunks of an earlier build would linger beside the new ones and be published.
// (tsc of an older layout wrote .js files here too.)
for (const name of readdirSafe(DIST))
  if (/\.(js|js\.map|d\.ts|d\.ts\.map)$/.test(name)) rmSync(join(DIST, name));

const build = await rolldown({
  input: {
    bin: join(APP, 'src', 'bin.ts'),
    // backend-local starts its background install as `./install-worker.js` beside its own code.
    'install-worker': join(
      dirname(fileURLToPath(import.meta.resolve('@mcpsandbox/backend-local'))),
      'install',
      'install-worker.js',
    ),
    // host-side runs `npm ci` through `./npm-gate.js` beside its own code (an early install step).
    'npm-gate': join(dirname(fileURLToPath(import.meta.resolve('@mcpsandbox/host-side'))), 'npm-gate.js'),
  },
  platform: 'node',
  external,
  // Workspace packages resolve to their built dist through their `exports`, as npm would.
  resolve: { conditionNames: ['import', 'default'] },
  treeshake: true,
  // Code shared by bin.js and a chunk goes into a chunk of its own: a chunk never imports the
  // entry, so loading one never starts the program.
  preserveEntrySignatures: 'strict',
});
const { output } = await build.write({
  dir: DIST,
  format: 'esm',
  entryFileNames: '[name].js',
  chunkFileNames: '[name]-[hash].js',
  sourcemap: false,
  minify: false,
});
await build.close();
chmodSync(join(DIST, 'bin.js'), 0o755);

// Every import the bundle leaves must be installed with the app, at the version the bundled
// library code was built and tested against.
const ours = new Set(output.map((c) => c.fileName));
const wanted = new Map();
for (const chunk of output)
  if (chunk.type === 'chunk')
    for (const specifier of [...chunk.imports, ...chunk.dynamicImports])
      if (!ours.has(specifier) && !isBuiltin(specifier)) wanted.set(packageName(specifier), chunk.fileName);
const problems = [];
for (const [name, chunk] of wanted) {
  const range = pkg.dependencies?.[name];
  if (!range) problems.push(`${chunk} imports ${name}, which is not in dependencies`);
}
// Each library's third-party code, imported or bundled, at the version it was built against.
for (const lib of Object.keys(pkg.devDependencies ?? {}).filter((n) => n.startsWith(WORKSPACE_SCOPE))) {
  const libPkg = JSON.parse(
    readFileSync(join(APP, 'node_modules', ...lib.split('/'), 'package.json'), 'utf8'),
  );
  for (const [name, range] of Object.entries(libPkg.dependencies ?? {})) {
    if (wanted.has(name) && pkg.dependencies[name] !== range)
      problems.push(`${lib} wants ${name}@${range}, the app depends on ${pkg.dependencies[name]}`);
    if (BUNDLED.has(name) && pkg.devDependencies?.[name] !== range)
      problems.push(`${lib} wants ${name}@${range}, the app bundles ${pkg.devDependencies?.[name]}`);
  }
}
// What was bundled, and its licence shipped.
const bundledDirs = new Map();
for (const chunk of output)
  if (chunk.type === 'chunk')
    for (const id of chunk.moduleIds) {
      const match = /^(.*\/node_modules\/((?:@[^/]+\/)?[^/]+))\//.exec(id);
      if (match && !match[2].startsWith(WORKSPACE_SCOPE)) bundledDirs.set(match[2], match[1]);
    }
for (const name of bundledDirs.keys())
  if (!BUNDLED.has(name)) problems.push(`${name} was bundled but is not in BUNDLED`);
const notices = [...bundledDirs].sort().map(([name, dir]) => {
  const own = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const licence = readdirSync(dir).find((f) => /^licen[cs]e/i.test(f));
  if (!licence) problems.push(`${name} has no licence file to ship`);
  const text = licence ? readFileSync(join(dir, licence), 'utf8').trim() : '';
  return `## ${name}@${own.version} (${own.license})\n\n${text}\n`;
});
writeFileSync(
  join(DIST, 'THIRD-PARTY-NOTICES.md'),
  `# Bundled third-party code\n\nThese packages are bundled into this directory's files.\n\n${notices.join('\n')}`,
);
if (problems.length > 0) {
  process.stderr.write(
    `bundle: the app's dependencies do not match its bundle:\n  ${problems.join('\n  ')}\n`,
  );
  process.exit(1);
}
const sizes = output
  .filter((c) => c.type === 'chunk')
  .map((c) => `${c.fileName} ${Math.round(c.code.length / 1024)} KiB`);
process.stdout.write(`bundle: ${sizes.join(', ')}; external: ${[...wanted.keys()].sort().join(', ')}\n`);

function readdirSafe(dir) {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
