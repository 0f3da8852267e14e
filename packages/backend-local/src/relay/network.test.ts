import { spawn } from 'node:child_process';
import type { Server } from 'node:net';
import { DenialReporter, parseGrant, SyntheticNames } from '@mcpsandbox/egress';
import { describe, expect, it } from 'vitest';
import { relaySource, SandboxNetwork } from './network.js';

/** Runs the relay on this host with `plan` and feeds what it sends to `network`. */
async function relay(plan: unknown[], network?: SandboxNetwork) {
  // The relay's parent is this process here (in a sandbox, the outer layer's shell).
  const child = spawn(process.execPath, ['-e', relaySource(), JSON.stringify(plan), String(process.pid)], {
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk;
  });
  const handles: unknown[] = [];
  let complete = false;
  child.on('message', (message, handle) => {
    handles.push(handle);
    if (network?.attach(message, handle)) complete = true;
  });
  const code = await new Promise<number | null>((done) => child.on('exit', done));
  return { code, stderr, complete, handles };
}

describe('the relay', () => {
  const warnings: string[] = [];
  const logger = { debug() {}, info() {}, error() {}, warn: (m: string) => warnings.push(m) };
  const make = () =>
    new SandboxNetwork({
      grants: [parseGrant('api.example.com')],
      names: new SyntheticNames(),
      reporter: new DenialReporter(undefined, logger),
      proxyPort: 3128,
      logger,
    });

  it('hands over every socket of the plan, and the proxy serves from the handle it got', async () => {
    const network = make();
    expect(network.sockets.map((s) => s.id)).toEqual(['proxy', 'dns-udp', 'dns-tcp', 'tcp-80', 'tcp-443']);
    // The same plan on ephemeral host ports: inside a sandbox it binds the ports above.
    const plan = network.sockets.map((s) => ({ ...s, host: '127.0.0.1', port: 0 }));
    const result = await relay(plan, network);
    expect(result).toMatchObject({ code: 0, complete: true });
    const proxy = result.handles[0] as Server;
    const port = (proxy.address() as { port: number }).port;
    const reply = await fetch(`http://127.0.0.1:${port}/`, { method: 'GET' }).then((r) => r.status);
    expect(reply).toBe(400); // not an absolute URI: the proxy, not a stranger, answered
    network.close();
  });

  it('goes on without a transparent-path socket it cannot open, and says so once', async () => {
    warnings.length = 0;
    const network = make();
    const plan = network.sockets.map((s) => ({
      ...s,
      // 192.0.2.123 is no address of this machine: binding it fails as a denied capability would.
      host: s.id === 'dns-udp' || s.id === 'tcp-443' ? '192.0.2.123' : '127.0.0.1',
      port: 0,
    }));
    const result = await relay(plan, network);
    expect(result).toMatchObject({ code: 0, complete: true });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /^transparent egress is not available in this sandbox: cannot open udp 127\.77\.0\.1:53 \(EADDRNOTAVAIL\)/,
    );
    network.close();
  });

  it('ends by itself when the shell that started it is gone (the sandbox ended first)', async () => {
    const plan = [{ id: 'dns-udp', kind: 'udp', host: '127.0.0.1', port: 0 }];
    // The shell starts the relay in the background and exits at once; its end of the channel
    // stays open here, so only the relay's own watch on its parent can end it.
    const shell = spawn(
      '/bin/sh',
      [
        '-c',
        '"$0" -e "$1" "$2" "$$" & echo $!; exit 0',
        process.execPath,
        relaySource(),
        JSON.stringify(plan),
      ],
      { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] },
    );
    let out = '';
    shell.stdout?.on('data', (chunk: Buffer) => {
      out += chunk;
    });
    await new Promise((done) => shell.on('exit', done));
    const pid = Number(out.trim());
    expect(pid).toBeGreaterThan(0);
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    const deadline = Date.now() + 10_000;
    while (alive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(alive()).toBe(false);
    if (shell.connected) shell.disconnect();
  });

  it('fails when the proxy cannot listen', async () => {
    const result = await relay([{ id: 'proxy', kind: 'tcp', host: '192.0.2.123', port: 0, required: true }]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^mcp-sandbox relay: listen EADDRNOTAVAIL/);
  });
});
