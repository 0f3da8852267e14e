/**
 * A hostile server with egress granted, from the attacker's side. With egress the sandbox sits
 * in a nested user namespace below the one that owns its network namespace (network.ts): these
 * cases check that nothing of that outer layer (its capabilities, the relay's IPC channel, the
 * listeners the host serves) is within reach, and that the host's DNS responder survives
 * whatever bytes the sandbox sends it. Each case prints what it got, so a case that did not
 * run fails on its missing output.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { Sandbox } from '@mcpsandbox/core';
import * as dnsPacket from 'dns-packet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalBackend, createNoneBackend } from '../src/index.js';
import { run } from './helpers.js';

const PROBE = String.raw`
const net = require('node:net');
const dgram = require('node:dgram');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const bindTcp = (port, host) => new Promise((done) => {
  const s = net.createServer();
  s.on('error', (e) => done(e.code));
  s.listen(port, host, () => { s.close(); done('bound'); });
});
const bindUdp = (port, host) => new Promise((done) => {
  const s = dgram.createSocket('udp4');
  s.on('error', (e) => done(e.code));
  s.bind(port, host, () => { s.close(); done('bound'); });
});
(async () => {
  const status = fs.readFileSync('/proc/self/status', 'utf8');
  const caps = Object.fromEntries(status.split('\n').filter((l) => l.startsWith('Cap')).map((l) => l.split(':\t')));
  const unshare = spawnSync('unshare', ['--user', '--map-root-user', 'true']);
  // Beyond stdio (pipes or socket pairs), no socket is open: the IPC channel stayed outside.
  const fds = fs.readdirSync('/proc/self/fd').filter((fd) => Number(fd) > 2).map((fd) => { try { return fs.readlinkSync('/proc/self/fd/' + fd); } catch { return ''; } });
  console.log(JSON.stringify({
    caps,
    unshare: unshare.status,
    dnsUdp: await bindUdp(53, '127.77.0.1'),
    dnsTcp: await bindTcp(53, '127.77.0.1'),
    https: await bindTcp(443, '127.77.0.2'),
    granted: await bindTcp(7000, '127.77.0.2'),
    ipcEnv: Object.keys(process.env).filter((k) => k.startsWith('NODE_CHANNEL')),
    sockets: fds.filter((l) => l.startsWith('socket:')).length,
  }));
})();
`;

// Junk at the responder over UDP and TCP, then one honest lookup that must still be answered.
const FLOOD = String.raw`
const dgram = require('node:dgram');
const net = require('node:net');
const dns = require('node:dns');
const junk = JSON.parse(process.argv[1]).map((hex) => Buffer.from(hex, 'hex'));
(async () => {
  const udp = dgram.createSocket('udp4');
  for (let round = 0; round < 20; round++) for (const packet of junk) udp.send(packet, 53, '127.77.0.1');
  await new Promise((r) => setTimeout(r, 200));
  udp.close();
  for (const packet of junk) {
    await new Promise((done) => {
      const s = net.connect(53, '127.77.0.1');
      const length = Buffer.alloc(2);
      length.writeUInt16BE(packet.length === 0 ? 0xffff : packet.length);
      s.on('connect', () => s.end(Buffer.concat([length, packet])));
      s.on('data', () => {});
      s.on('close', done);
      s.on('error', () => {});
    });
  }
  dns.lookup(process.argv[2], (error, address) => console.log(JSON.stringify({ sent: junk.length * 21, error: error?.code, address })));
})();
`;

const open: Sandbox[] = [];
afterAll(async () => {
  await Promise.all(open.map((box) => box.close()));
});

async function sandbox(which: 'local' | 'none', allow: readonly string[]): Promise<Sandbox> {
  const backend = which === 'local' ? createLocalBackend() : createNoneBackend();
  const box = await backend.create({
    sessionId: 'egress-attack',
    env: {},
    ttlMs: 60_000,
    network: { allow },
  });
  open.push(box);
  return box;
}

describe('a hostile server with egress granted', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox('local', ['granted.test', 'granted.test:7000']);
  });

  it("holds no capability, cannot create a user namespace, and cannot take the host's sockets", async () => {
    const result = await run(box, ['node', '-e', PROBE]);
    const got = JSON.parse(result.stdout.trim().split('\n').pop() ?? '{}');
    expect(got.caps).toMatchObject({
      CapEff: '0000000000000000',
      CapPrm: '0000000000000000',
      CapAmb: '0000000000000000',
      CapBnd: '0000000000000000',
    });
    expect(got.unshare).not.toBe(0);
    // The outer layer could bind these; the sandbox cannot, and the granted port is the host's.
    expect(got).toMatchObject({ dnsUdp: 'EACCES', dnsTcp: 'EACCES', https: 'EACCES', granted: 'EADDRINUSE' });
    // The relay's IPC channel closed before the sandbox started.
    expect(got.ipcEnv).toEqual([]);
    expect(got.sockets).toBe(0);
  });

  it('control: unsandboxed, the same probe binds the granted port it is refused above', async () => {
    const none = await sandbox('none', ['granted.test']);
    const result = await run(none, ['node', '-e', PROBE]);
    const got = JSON.parse(result.stdout.trim().split('\n').pop() ?? '{}');
    expect(got.granted).toBe('bound');
  });

  it('cannot crash or wedge the DNS responder with malformed queries', async () => {
    const query = dnsPacket.encode({
      type: 'query',
      id: 7,
      questions: [{ type: 'A', name: 'granted.test' }],
    });
    const loop = Buffer.from(query);
    // A name that points at itself, a truncated header, a huge count, a response, empty bytes.
    loop.writeUInt16BE(0xc00c, 12);
    const junk = [
      loop,
      query.subarray(0, 5),
      Buffer.concat([query.subarray(0, 4), Buffer.from([0xff, 0xff]), query.subarray(6)]),
      Buffer.from(dnsPacket.encode({ type: 'response', id: 9, questions: [{ type: 'A', name: 'x.test' }] })),
      Buffer.alloc(0),
      Buffer.alloc(3000, 0xc0),
    ].map((b) => b.toString('hex'));
    const result = await run(box, ['node', '-e', FLOOD, JSON.stringify(junk), 'granted.test']);
    const got = JSON.parse(result.stdout.trim().split('\n').pop() ?? '{}');
    expect(got.sent).toBe(126);
    expect(got.error).toBeUndefined();
    expect(got.address).toMatch(/^127\.77\./);
  });

  it('leaves no process behind after close(), through the outer layer too', async () => {
    const tag = `2000.${Date.now()}`;
    const mine = await sandbox('local', ['granted.test']);
    await run(mine, ['/bin/sh', '-c', `setsid sleep ${tag} >/dev/null 2>&1 & echo started`]);
    await mine.close();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const left = readdirSync('/proc')
      .filter((entry) => /^\d+$/.test(entry))
      .filter((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(tag);
        } catch {
          return false;
        }
      });
    for (const pid of left) process.kill(Number(pid), 'SIGKILL');
    expect(left).toEqual([]);
  });
});
