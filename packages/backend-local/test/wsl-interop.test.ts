/**
 * Inside WSL2 the sandbox must not reach Windows through interop. WSL registers a binfmt_misc
 * handler for the `MZ` magic (`:WSLInterop:M::MZ::/init:PF`): with the F flag the kernel opened
 * /init at registration, so an exec of any `MZ` file hands it to /init whatever the sandbox's
 * mount view hides. /init then asks Windows to start the program through the interop socket
 * named by WSL_INTEROP (under /run/WSL) or over vsock; Windows drives show at /mnt/c.
 *
 * This machine is not WSL, so the interop paths are stood in for, inside a user and mount
 * namespace of the test's own: a binfmt_misc instance of that namespace with the same `MZ`
 * handler (kernel 6.7+; a copy of python3 outside the sandbox's view stands in for /init, so that
 * the `MZ` file, which is also a Python script, shows what the handler can reach), a listening
 * socket at /run/WSL/1_interop, a file at /mnt/c, and WSL's variables in the environment. The
 * same probe runs under `none`, where every reach must succeed, and under `local`, where none may.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN } from './cli.js';

const SECRET = `windows-file-${process.pid}-${Date.now()}`;
const work = mkdtempSync(join(tmpdir(), 'mcpsandbox-wsl-'));
chmodSync(work, 0o755);
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** What both the server and the `MZ` handler report, as one JSON line on stderr. */
const REACH = String.raw`
import json, os, socket, sys
def reach():
    out = {"env": sorted(k for k in os.environ if k.startswith("WSL"))}
    try: out["mnt_c"] = open("/mnt/c/Users/me/secret.txt").read().strip()
    except Exception as e: out["mnt_c"] = type(e).__name__
    try:
        s = socket.socket(socket.AF_UNIX); s.settimeout(2); s.connect("/run/WSL/1_interop")
        out["interop"] = s.recv(64).decode()
    except Exception as e: out["interop"] = type(e).__name__
    try: socket.socket(40, socket.SOCK_STREAM); out["vsock"] = "created"
    except Exception as e: out["vsock"] = type(e).__name__
    return out
`;

/** The hostile server: writes an `MZ` file that is also Python, execs it, and reports both views. */
const PROBE = `${REACH}
import subprocess, tempfile
path = os.path.join(tempfile.gettempdir(), "setup.exe")
with open(path, "w") as f: f.write("MZ=1\\n" + ${JSON.stringify(REACH)} + "\\nprint(json.dumps(reach()), file=sys.stderr)\\n")
os.chmod(path, 0o755)
try:
    r = subprocess.run([path], capture_output=True, text=True, timeout=20)
    handler = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "no output, exit %d" % r.returncode
    handler = json.loads(handler) if handler.startswith("{") else handler
except Exception as e:
    handler = type(e).__name__
print("REPORT " + json.dumps({"server": reach(), "handler": handler}), file=sys.stderr)
`;

/** Sets up the stand-in interop inside a private user and mount namespace, then runs the bridge. */
const SETUP = String.raw`
set -e
read -r mapped
mkdir -p "$W/binfmt"
mount -t binfmt_misc binfmt_misc "$W/binfmt"
echo ":WSLInterop:M::MZ::$W/init:PF" > "$W/binfmt/register"
mount -t tmpfs tmpfs /mnt
mkdir -p /mnt/c/Users/me && echo "$SECRET" > /mnt/c/Users/me/secret.txt
mount -t tmpfs tmpfs /run
mkdir -p /run/WSL
/usr/bin/python3 -c 'import socket,sys
s=socket.socket(socket.AF_UNIX); s.bind("/run/WSL/1_interop"); s.listen(8); print("ready", flush=True)
while True:
    c,_=s.accept(); c.sendall(b"windows"); c.close()' > "$W/listening" &
for i in $(seq 50); do [ -s "$W/listening" ] && break; sleep 0.1; done
"$NODE" "$BIN" run --backend "$BACKEND" $PASS -- /usr/bin/python3 -c "$PROBE" < /dev/null
`;

function canStandIn(): string | undefined {
  const probe = spawnSync(
    'unshare',
    [
      '--user',
      '--map-root-user',
      '--mount',
      'sh',
      '-c',
      `mkdir -p "$1" && mount -t binfmt_misc b "$1"`,
      'sh',
      join(work, 'probe'),
    ],
    { encoding: 'utf8' },
  );
  if (probe.error) return 'unshare is not installed';
  if (probe.status !== 0)
    return `no binfmt_misc of a user namespace here (kernel 6.7+): ${probe.stderr.trim()}`;
  return undefined;
}

interface Reach {
  readonly env: readonly string[];
  readonly mnt_c: string;
  readonly interop: string;
  readonly vsock: string;
}

/**
 * A user namespace that maps the host's first 65536 ids onto themselves (the sandbox runs as
 * nobody and its home is chowned to it), written by this process as root: there is no newuidmap.
 */
async function inNamespace(
  script: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stderr: string }> {
  const child = spawn('unshare', ['--user', '--mount', 'sh', '-c', script], {
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  child.stdout.resume();
  const exited = once(child, 'exit');
  // The namespace exists once sh runs: wait for its uid_map to be writable (empty until written).
  for (let i = 0; i < 100; i++) {
    try {
      writeFileSync(`/proc/${child.pid}/uid_map`, '0 0 65536\n');
      writeFileSync(`/proc/${child.pid}/gid_map`, '0 0 65536\n');
      break;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  child.stdin.end('mapped\n');
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const [code] = (await exited) as [number | null];
  clearTimeout(timer);
  return { code, stderr };
}

async function runProbe(backend: 'local' | 'none'): Promise<{ server: Reach; handler: Reach | string }> {
  const w = join(work, backend);
  mkdirSync(w, { recursive: true, mode: 0o755 });
  copyFileSync(realpathSync('/usr/bin/python3'), join(w, 'init'));
  chmodSync(join(w, 'init'), 0o755);
  writeFileSync(join(w, 'listening'), '');
  const result = await inNamespace(SETUP, {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/root',
    W: w,
    SECRET,
    NODE: process.execPath,
    BIN,
    BACKEND: backend,
    // The control forwards WSL's variables, so that it can tell that they are there to withhold.
    PASS: backend === 'none' ? '--env WSL_INTEROP --env WSL_DISTRO_NAME --env WSLENV' : '',
    PROBE,
    // What WSL puts in every Linux process's environment.
    WSL_INTEROP: '/run/WSL/1_interop',
    WSL_DISTRO_NAME: 'Ubuntu-24.04',
    WSLENV: 'WT_SESSION:WT_PROFILE_ID',
  });
  const line = result.stderr.split('\n').find((l) => l.includes('REPORT {'));
  if (!line) throw new Error(`no report (exit ${result.code}):\n${result.stderr}`);
  return JSON.parse(line.slice(line.indexOf('{')));
}

const missing = canStandIn();

describe.skipIf(missing !== undefined)(
  `WSL interop from inside the sandbox${missing ? ` (skipped: ${missing})` : ''}`,
  () => {
    it('without a sandbox, the stand-ins are reachable: the MZ handler runs, sees the socket, the drive and the variables', async () => {
      const { server, handler } = await runProbe('none');
      expect(server).toMatchObject({
        env: ['WSLENV', 'WSL_DISTRO_NAME', 'WSL_INTEROP'],
        mnt_c: SECRET,
        interop: 'windows',
      });
      expect(handler).toMatchObject({ mnt_c: SECRET, interop: 'windows' });
    }, 90_000);

    it('in the sandbox, neither the server nor the MZ handler the kernel starts for it reaches Windows', async () => {
      const { server, handler } = await runProbe('local');
      const nowhere = (reach: Reach) => {
        expect(reach.env).toEqual([]);
        expect(reach.mnt_c).not.toBe(SECRET);
        expect(reach.interop).not.toBe('windows');
        expect(reach.vsock).not.toBe('created');
      };
      nowhere(server);
      // The kernel does start the handler (its file was opened at registration): it runs with
      // the sandbox's namespaces, user, environment and system-call filter, and reaches nothing.
      expect(typeof handler, JSON.stringify(handler)).toBe('object');
      nowhere(handler as Reach);
    }, 90_000);
  },
);
