/**
 * Drives the built `mcp-sandbox` binary (apps/cli, built before these tests run) as a client
 * would, and serves a hostile package from a registry on loopback.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

export const BIN = fileURLToPath(new URL('../../../apps/cli/dist/bin.js', import.meta.url));
export const FIXTURES = fileURLToPath(new URL('./fixtures', import.meta.url));
/** The MCP server every fixture package ships as its bin (copied in when the package is packed). */
export const SHARED_SERVER = join(FIXTURES, 'shared', 'server.cjs');

export interface Running {
  readonly client: Client;
  readonly transport: StdioClientTransport;
  readonly stderr: () => string;
  /** Calls a tool of the fixture server and parses its JSON answer. */
  readonly call: (name: string, args?: Record<string, unknown>) => Promise<Record<string, unknown>>;
}

/**
 * The suite's pin lock (vitest.shared.ts sets one): the bridges of these tests keep their pins
 * there. A pin binds name@version to one tarball whichever registry serves it, and each loopback
 * registry packs its own tarball of the same name@version: a start given a registry
 * (`npmRegistry=`) keeps its pins in a lock of that registry's own, beside the suite's.
 */
function suitePinLock(args: readonly string[]): string {
  const lock = process.env.MCP_SANDBOX_PIN_LOCK;
  if (!lock) throw new Error('MCP_SANDBOX_PIN_LOCK is not set: run these tests with their vitest config');
  const registry = args.find((arg) => arg.startsWith('npmRegistry='));
  if (!registry) return lock;
  return `${lock}.${createHash('sha256').update(registry).digest('hex').slice(0, 16)}.json`;
}

/** `mcp-sandbox run <args>` with the real SDK client over stdio. */
export async function runBin(
  args: readonly string[],
  env: Record<string, string> = {},
  options: { readonly cwd?: string } = {},
): Promise<Running> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'run', ...args],
    ...(options.cwd ? { cwd: options.cwd } : {}),
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/',
      MCP_SANDBOX_PIN_LOCK: suitePinLock(args),
      ...env,
    },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const client = new Client({ name: 'host-side-test', version: '0.0.0' }, { capabilities: {} });
  try {
    await client.connect(transport);
  } catch (error) {
    throw new Error(`mcp-sandbox run failed to start: ${String(error)}\n${stderr}`);
  }
  const call = async (name: string, callArgs: Record<string, unknown> = {}) => {
    const result = await client.callTool({ name, arguments: callArgs }, undefined, { timeout: 60_000 });
    const content = result.content as Array<{ text: string }>;
    return JSON.parse(content[0]?.text ?? '{}') as Record<string, unknown>;
  };
  return { client, transport, stderr: () => stderr, call };
}

/** `mcp-sandbox run <args>` with raw stdio until it exits: `input` written first, stdin left open. */
export async function runToExit(
  args: readonly string[],
  options: { readonly input?: string; readonly env?: NodeJS.ProcessEnv } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, 'run', ...args], {
    env: options.env ?? { ...process.env, MCP_SANDBOX_PIN_LOCK: suitePinLock(args) },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  if (options.input !== undefined) child.stdin.write(options.input);
  const [code] = (await once(child, 'close')) as [number | null];
  child.stdin.destroy();
  return { code, stdout, stderr };
}

/** What the install script of the hostile package is told to do (baked into the tarball). */
export interface AttackConfig {
  readonly canary: string;
  readonly markerNames: readonly string[];
  readonly secretName: string;
  readonly mountedFile: string;
  /** A directory granted read-write to the server, where the install script tries to write. */
  readonly writableDir?: string;
}

export interface Registry {
  readonly url: string;
  /** Bodies the hostile install script posted to /beacon. */
  readonly beacons: Array<Record<string, unknown>>;
  /** How many times the package's tarball was served. */
  readonly tarballs: () => number;
  /** How many times the package's document (packument) was asked for. */
  readonly packuments: () => number;
  /** Requests npm made (its user agent says so), as opposed to the host's own questions. */
  readonly npmRequests: () => number;
  /** From now on, answer 404 for the package, as a registry does for a private one to a stranger. */
  hide(): void;
  close(): Promise<void>;
}

export const HOSTILE_PACKAGE = 'hostile-install';

/**
 * An npm registry on 127.0.0.2 (loopback, but outside the sandbox's NO_PROXY list, so npm
 * inside goes through the egress proxy) serving the hostile package, packed with `config`.
 */
export async function startRegistry(
  config: AttackConfig | Record<string, unknown>,
  name: string = HOSTILE_PACKAGE,
  options: {
    readonly port?: number;
    /**
     * Serve npm (its user agent) another tarball of the same name@version than the host's own
     * questions get: an install that differs from what was pinned, as a poisoned cache gives.
     */
    readonly impostorForNpm?: boolean;
  } = {},
): Promise<Registry> {
  const beacons: Array<Record<string, unknown>> = [];
  let tarballs = 0;
  let packuments = 0;
  let npmRequests = 0;
  let hidden = false;
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.2', resolve));
  // A path of its own: the pin lock keys pins by registry address, each registry packs its
  // tarball anew, and the kernel may hand a later registry the port of an earlier one. Not a
  // UUID: npm takes one for a token and will not say a registry URL holding it.
  const url = `http://127.0.0.2:${(server.address() as { port: number }).port}/${randomBytes(12).toString('hex')}/`;
  const prefix = new URL(url).pathname.slice(0, -1);
  const tarball = packFixture(name, { ...config, registry: url });
  const impostor = options.impostorForNpm
    ? packFixture(name, { ...config, registry: url, impostor: true })
    : tarball;
  const manifest = JSON.parse(readFileSync(join(FIXTURES, name, 'package.json'), 'utf8')) as Record<
    string,
    unknown
  >;
  const tarballPath = `/${name}/-/${name}-1.0.0.tgz`;
  const packumentOf = (bytes: Buffer) => ({
    name,
    'dist-tags': { latest: '1.0.0' },
    versions: {
      '1.0.0': {
        ...manifest,
        hasInstallScript: true,
        dist: {
          tarball: new URL(`${prefix}${tarballPath}`, url).href,
          shasum: createHash('sha1').update(bytes).digest('hex'),
          integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`,
        },
      },
    },
  });
  server.on('request', (request, response) => {
    const full = new URL(request.url ?? '/', url).pathname;
    // Only this registry's own path is served: anything else is another registry's address.
    const path = full.startsWith(`${prefix}/`) ? full.slice(prefix.length) : '/not-this-registry';
    const fromNpm = /^npm\//.test(request.headers['user-agent'] ?? '');
    if (fromNpm) npmRequests++;
    const served = fromNpm ? impostor : tarball;
    if (request.method === 'POST' && path === '/beacon') {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        try {
          beacons.push(JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown>);
        } catch {
          beacons.push({ unparsable: Buffer.concat(chunks).toString() });
        }
        response.end('ok');
      });
    } else if (hidden && path.startsWith(`/${name}`)) {
      if (path === `/${name}`) packuments++;
      response.statusCode = 404;
      response.end('{"error":"Not found"}');
    } else if (path === `/${name}`) {
      packuments++;
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify(packumentOf(served)));
    } else if (path === tarballPath) {
      tarballs++;
      response.setHeader('content-type', 'application/octet-stream');
      response.end(served);
    } else {
      response.statusCode = 404;
      response.end('{}');
    }
  });
  return {
    url,
    beacons,
    tarballs: () => tarballs,
    packuments: () => packuments,
    npmRequests: () => npmRequests,
    hide: () => {
      hidden = true;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A fixture package with its config (as attack.json), as a registry tarball (`package/…`). */
function packFixture(name: string, config: Record<string, unknown>): Buffer {
  const work = mkdtempSync(join(tmpdir(), 'mcpsandbox-pack-'));
  try {
    cpSync(join(FIXTURES, name), join(work, 'package'), { recursive: true });
    // A fixture without a server of its own ships the shared probing one, kept once.
    const server = join(work, 'package', 'server.cjs');
    if (!existsSync(server)) cpSync(SHARED_SERVER, server);
    writeFileSync(join(work, 'package', 'attack.json'), JSON.stringify(config));
    const out = join(work, 'package.tgz');
    execFileSync('tar', ['-czf', out, '-C', work, 'package']);
    return readFileSync(out);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
