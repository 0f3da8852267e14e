/**
 * A hostile server tries to outlive its session: it ptraces the sandbox's init (pid 1), makes it
 * clear its own parent-death signal, and leaves a `setsid` daemon behind. Through the built
 * binary, after a client EOF, a TTL expiry and a SIGKILL of the bridge, no process of the
 * sandbox's pid namespace may be left.
 *
 * Fails before the allowlist filter refused ptrace and close() killed the namespace's init: the
 * injection succeeded and the daemon survived, reparented with bwrap's init to the host's init.
 * The control in every case: the daemon was seen running on the host before the session ended.
 * The last two cases do the injection from the host with the init's filter suspended, as if the
 * filter had let it through, so that close() is tested on its own.
 */
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type Bridge,
  compileFixture,
  killAllOf,
  namespaceInit,
  openTempDir,
  pidNamespaceOf,
  processesInNamespace,
  processesWith,
  startBridge,
  waitUntil,
} from './binary.js';

const IS_ROOT = process.getuid?.() === 0;
let dir: string;
let helper: string;
/** Namespaces and tags of this file's sandboxes: whatever a failed case left is killed after it. */
const started: { namespace?: string; tag: string; bridge: Bridge }[] = [];

beforeAll(() => {
  dir = openTempDir('mcpsandbox-teardown-');
  helper = compileFixture('pdeathsig', dir);
});

afterEach(() => {
  for (const { namespace, tag, bridge } of started.splice(0)) {
    bridge.child.kill('SIGKILL');
    killAllOf([...(namespace ? processesInNamespace(namespace) : []), ...processesWith(`1000.${tag}`)]);
  }
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Starts the hostile server and waits until its daemon runs; returns the sandbox's pid namespace. */
async function startHostile(mode: 'attack' | 'memattack' | 'daemon', extraArgs: string[] = []) {
  const tag = `${Date.now()}${Math.floor(Math.random() * 1e6)}`;
  const bridge = startBridge([...extraArgs, '--', helper, mode, tag]);
  const entry: (typeof started)[number] = { tag, bridge };
  started.push(entry);
  await waitUntil(() => bridge.stderr().includes('daemon:started'), 'the daemon to start');
  let daemon: number | undefined;
  await waitUntil(() => {
    daemon = processesWith(`1000.${tag}`)[0];
    return daemon !== undefined;
  }, 'the daemon on the host (control)');
  const namespace = pidNamespaceOf(daemon as number);
  if (namespace) entry.namespace = namespace;
  expect(namespace, 'the daemon runs in a pid namespace of its own').toBeDefined();
  expect(namespace).not.toBe(pidNamespaceOf(process.pid));
  return { bridge, tag, namespace: namespace as string };
}

/** After the session ended: nothing of its pid namespace is left (checked for a while). */
async function expectNothingLeft(namespace: string, tag: string) {
  const left = () => [...new Set([...processesInNamespace(namespace), ...processesWith(`1000.${tag}`)])];
  await waitUntil(() => left().length === 0, 'the sandbox to be gone', 5_000).catch(() => {});
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(left(), 'processes of the sandbox left after the session').toEqual([]);
}

function injectedResult(bridge: Bridge): string | undefined {
  return /inject:(-?\d+)/.exec(bridge.stderr())?.[1];
}

describe('a hostile server cannot outlive its session', () => {
  it('after a client EOF', { timeout: 30_000 }, async () => {
    const { bridge, tag, namespace } = await startHostile('attack');
    // ptrace is outside the allowlist: the injection fails at PTRACE_ATTACH.
    expect(injectedResult(bridge), bridge.stderr()).not.toBe('0');
    bridge.child.stdin.end();
    expect((await bridge.exit).code).toBe(0);
    await expectNothingLeft(namespace, tag);
  });

  it('after a TTL expiry', { timeout: 30_000 }, async () => {
    const { bridge, tag, namespace } = await startHostile('attack', ['--ttl', '2s']);
    expect(injectedResult(bridge), bridge.stderr()).not.toBe('0');
    expect((await bridge.exit).code).toBe(124);
    await expectNothingLeft(namespace, tag);
  });

  it('after the bridge is killed (SIGKILL)', { timeout: 30_000 }, async () => {
    const { bridge, tag, namespace } = await startHostile('attack');
    expect(injectedResult(bridge), bridge.stderr()).not.toBe('0');
    bridge.child.kill('SIGKILL');
    await bridge.exit;
    await expectNothingLeft(namespace, tag);
  });

  // Without ptrace, the same injection through /proc/1/mem (x86_64 machine code). Fails before
  // the filter allowed PR_SET_PDEATHSIG only to SIGKILL (bwrap's init runs under the filter too).
  it.runIf(process.arch === 'x64')(
    'after the bridge is killed, even when code was written into the init through /proc/1/mem',
    { timeout: 30_000 },
    async () => {
      const { bridge, tag, namespace } = await startHostile('memattack');
      // Control: the code was written into pid 1 and ran there.
      expect(/meminject:(-?\d+)/.exec(bridge.stderr())?.[1], bridge.stderr()).toBe('0');
      bridge.child.kill('SIGKILL');
      await bridge.exit;
      await expectNothingLeft(namespace, tag);
    },
  );

  // The filter now refuses the injected prctl in the init too; only root can suspend the filter
  // from the host (PTRACE_O_SUSPEND_SECCOMP), so these two run as root (as CI does).
  for (const ending of ['client EOF', 'TTL expiry'] as const) {
    it.runIf(IS_ROOT)(
      `after a ${ending}, even when the init lost its parent-death signal`,
      {
        timeout: 30_000,
      },
      async () => {
        const { bridge, tag, namespace } = await startHostile(
          'daemon',
          ending === 'TTL expiry' ? ['--ttl', '2s'] : [],
        );
        const init = namespaceInit(namespace);
        expect(init, 'the namespace init on the host').toBeDefined();
        // Control: the injection worked (prctl returned 0 in the init).
        const injected = await promisify(execFile)(helper, ['inject', String(init)]);
        expect(injected.stderr).toBe('inject:0\n');
        if (ending === 'client EOF') bridge.child.stdin.end();
        expect((await bridge.exit).code).toBe(ending === 'TTL expiry' ? 124 : 0);
        await expectNothingLeft(namespace, tag);
      },
    );
  }
});
