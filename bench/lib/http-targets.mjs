// The HTTP fronts of the `serve` suite: the same stdio server (bench/servers/sdk-echo.mjs) behind
// `mcp-sandbox serve`, behind supergateway, and served directly by the SDK's own HTTP server.
// Each front is a process of its own that listens on 127.0.0.1; `stop()` ends it and its children.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { connect, createServer } from 'node:net';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { BIN, ROOT } from './env.mjs';
import { sleep } from './proc.mjs';
import { BIN_NODE_OPTIONS } from './targets.mjs';

export const SDK_ECHO = join(ROOT, 'bench', 'servers', 'sdk-echo.mjs');
const LISTENING = /listening on http:\/\/127\.0\.0\.1:(\d+)\/mcp/;

/** supergateway's CLI from the root devDependency, or why it is absent. */
export function supergatewayCli() {
  try {
    const require = createRequire(join(ROOT, 'package.json'));
    const pkgPath = require.resolve('supergateway/package.json');
    const pkg = require(pkgPath);
    return { bin: join(dirname(pkgPath), pkg.bin.supergateway), version: pkg.version };
  } catch (error) {
    return { missing: `supergateway is not installed (${error.message.split('\n')[0]})` };
  }
}

/** A port that was free a moment ago (supergateway takes a number, not 0). */
function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

function accepts(port) {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Fronts still running: killed if the bench exits without stopping them (a throw, an exit). */
const live = new Set();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/**
 * Spawns `argv` and waits until it listens: the port from the `listening on …` line on stderr, or
 * `port` accepting. In the bench's process group, so a Ctrl-C reaches it too; `stop` sends SIGTERM
 * (serve and supergateway end the servers they started), SIGKILL after 5 s.
 */
async function launch(argv, { port, timeoutMs = 30_000 } = {}) {
  const [file, ...args] = argv;
  const child = spawn(file, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  live.add(child);
  let stderr = '';
  let gone = false;
  child.stderr.on('data', (chunk) => {
    stderr = (stderr + chunk.toString()).slice(-8000);
  });
  const exited = new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      gone = true;
      live.delete(child);
      resolve({ code, signal });
    });
    child.once('error', (error) => {
      gone = true;
      live.delete(child);
      stderr += `\n${error.message}`;
      resolve({ code: null, signal: null });
    });
  });
  const deadline = Date.now() + timeoutMs;
  let bound;
  while (bound === undefined) {
    if (gone || Date.now() > deadline) break;
    const match = LISTENING.exec(stderr);
    if (match) bound = Number(match[1]);
    else if (port !== undefined && (await accepts(port))) bound = port;
    else await sleep(50);
  }
  const stop = async () => {
    if (!gone) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
  };
  if (bound === undefined) {
    await stop();
    const tail = stderr.trim().split('\n').slice(-3).join(' / ');
    throw new Error(`did not listen within ${timeoutMs} ms${tail ? `: ${tail}` : ''}`);
  }
  return { pid: child.pid, url: `http://127.0.0.1:${bound}/mcp`, stop, stderr: () => stderr };
}

/** The stdio server's argv for `era` ('2025' or '2026'). */
export const echoServer = (era) => [process.execPath, SDK_ECHO, '--era', era];

/**
 * The fronts: `{ name, start(era) → { url, headers, pid, stop } }`. `serve` runs with a token in a
 * private temp file (as a user would: `--token-file`), on the default backend unless `backend`.
 */
export function httpFronts({ supergateway, serveArgs = [] }) {
  const serve = (name, backendArgs) => ({
    name,
    async start(era) {
      const dir = mkdtempSync(join(os.tmpdir(), 'mcpsandbox-bench-serve-'));
      const token = randomBytes(24).toString('hex');
      const tokenFile = join(dir, 'token');
      writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
      const argv = [
        process.execPath,
        ...BIN_NODE_OPTIONS,
        BIN,
        'serve',
        '--port',
        '0',
        '--token-file',
        tokenFile,
      ];
      try {
        const front = await launch([...argv, ...backendArgs, ...serveArgs, '--', ...echoServer(era)]);
        const stop = front.stop;
        front.stop = async () => {
          await stop();
          rmSync(dir, { recursive: true, force: true });
        };
        return { ...front, headers: { authorization: `Bearer ${token}` } };
      } catch (error) {
        rmSync(dir, { recursive: true, force: true });
        throw error;
      }
    },
  });
  const fronts = [
    {
      name: 'direct',
      start: async (era) => ({ ...(await launch([...echoServer(era), '--http', '0'])), headers: {} }),
    },
    serve('serve', []),
    serve('serve --backend none', ['--backend', 'none']),
  ];
  if (supergateway.bin)
    fronts.push({
      name: 'supergateway',
      async start(era) {
        const port = await freePort();
        // supergateway runs --stdio through a shell: quote each word.
        const command = echoServer(era)
          .map((word) => `'${word.replaceAll("'", "'\\''")}'`)
          .join(' ');
        const argv = [
          process.execPath,
          supergateway.bin,
          '--stdio',
          command,
          '--outputTransport',
          'streamableHttp',
        ];
        argv.push('--stateful', '--port', String(port), '--logLevel', 'none');
        return { ...(await launch(argv, { port })), headers: {} };
      },
    });
  return fronts;
}
