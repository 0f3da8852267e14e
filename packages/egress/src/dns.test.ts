import { createSocket } from 'node:dgram';
import { Resolver } from 'node:dns/promises';
import { connect, createServer } from 'node:net';
import * as dnsPacket from 'dns-packet';
import { afterEach, describe, expect, it } from 'vitest';
import { answerQuery, DnsResponder, type NameBook } from './dns.js';
import { nameIsGranted, SyntheticNames } from './egress.js';
import { parseGrant } from './grants.js';

const grants = ['api.example.com', '*.cdn.example.net:443'].map(parseGrant);

function book(): NameBook & { refusedNames: string[] } {
  const names = new SyntheticNames();
  const refusedNames: string[] = [];
  return {
    refusedNames,
    addressFor: (name) => (nameIsGranted(grants, name) ? (names.addressFor(name) ?? 'exhausted') : undefined),
    refused: (name) => refusedNames.push(name),
    invalid: () => refusedNames.push('(invalid)'),
  };
}

const query = (name: string, type: dnsPacket.RecordType = 'A', extra: Partial<dnsPacket.Packet> = {}) =>
  dnsPacket.encode({
    type: 'query',
    id: 4242,
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [{ type, name, class: 'IN' }],
    ...extra,
  });

const decode = (buffer: Buffer | undefined) => {
  expect(buffer).toBeDefined();
  return dnsPacket.decode(buffer as Buffer) as dnsPacket.DecodedPacket & { rcode: string };
};

describe('answerQuery', () => {
  it('answers A for a granted name with a stable synthetic address, AAAA with no record', () => {
    const b = book();
    const first = decode(answerQuery(query('API.example.com.'), b));
    expect(first).toMatchObject({ id: 4242, type: 'response', rcode: 'NOERROR', flag_rd: true });
    expect(first.answers).toEqual([expect.objectContaining({ type: 'A', data: '127.77.0.2' })]);
    const sub = decode(answerQuery(query('a.cdn.example.net'), b));
    expect(sub.answers?.[0]).toMatchObject({ data: '127.77.0.3' });
    expect(decode(answerQuery(query('api.example.com'), b)).answers?.[0]).toMatchObject({
      data: '127.77.0.2',
    });
    const v6 = decode(answerQuery(query('api.example.com', 'AAAA'), b));
    expect(v6).toMatchObject({ rcode: 'NOERROR', answers: [] });
    expect(b.refusedNames).toEqual([]);
  });

  it('answers NXDOMAIN for other names and reports them', () => {
    const b = book();
    for (const name of ['example.org', 'cdn.example.net', 'evilapi.example.com']) {
      expect(decode(answerQuery(query(name), b)).rcode).toBe('NXDOMAIN');
    }
    expect(b.refusedNames).toEqual(['example.org', 'cdn.example.net', 'evilapi.example.com']);
  });

  // Issue 20, finding 1: a question's name is parsed as a host name before any grant sees it.
  it('refuses a name that is not a host name (a NUL, a space, shell code, non-ASCII) without an address', () => {
    const b = book();
    const wire = (labels: string[]) => {
      const parts = [Buffer.from([0x10, 0x92, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0])];
      for (const label of labels)
        parts.push(Buffer.from([Buffer.byteLength(label, 'latin1')]), Buffer.from(label, 'latin1'));
      return Buffer.concat([...parts, Buffer.from([0, 0, 1, 0, 1])]);
    };
    for (const labels of [
      ['203', '0', '113', '7\0', 'cdn', 'example', 'net'],
      ['a b', 'cdn', 'example', 'net'],
      ['x;{touch,m};x', 'cdn', 'example', 'net'],
      ['\xfc', 'cdn', 'example', 'net'],
      ['a_b', 'cdn', 'example', 'net'],
    ]) {
      const answer = decode(answerQuery(wire(labels), b));
      expect(answer.rcode, JSON.stringify(labels)).toBe('REFUSED');
      expect(answer.answers).toEqual([]);
    }
    // Control: the same wire form with plain labels is answered.
    expect(decode(answerQuery(wire(['a', 'cdn', 'example', 'net']), b)).answers?.[0]).toMatchObject({
      type: 'A',
    });
    expect(b.refusedNames).toEqual(Array(5).fill('(invalid)'));
  });

  it('refuses other types, classes and opcodes cleanly', () => {
    const b = book();
    expect(decode(answerQuery(query('api.example.com', 'MX'), b)).rcode).toBe('REFUSED');
    expect(decode(answerQuery(query('api.example.com', 'TXT'), b)).rcode).toBe('REFUSED');
    const chaos = dnsPacket.encode({
      type: 'query',
      id: 1,
      questions: [{ type: 'A', name: 'api.example.com', class: 'CH' }],
    });
    expect(decode(answerQuery(chaos, b)).rcode).toBe('REFUSED');
    const notify = Buffer.from(query('api.example.com'));
    notify.writeUInt16BE(notify.readUInt16BE(2) | (4 << 11), 2);
    expect(decode(answerQuery(notify, b)).rcode).toBe('NOTIMP');
    const two = dnsPacket.encode({
      type: 'query',
      id: 2,
      questions: [
        { type: 'A', name: 'api.example.com' },
        { type: 'A', name: 'example.org' },
      ],
    });
    expect(decode(answerQuery(two, b)).rcode).toBe('FORMERR');
  });

  it('never answers a response or a short packet, and answers garbage with FORMERR', () => {
    const b = book();
    expect(answerQuery(Buffer.alloc(5), b)).toBeUndefined();
    expect(answerQuery(dnsPacket.encode({ type: 'response', id: 3, questions: [] }), b)).toBeUndefined();
    expect(answerQuery(Buffer.alloc(5000), b)).toBeUndefined();
    const looped = Buffer.from(query('api.example.com'));
    looped.writeUInt16BE(0xc00c, 12);
    expect(decode(answerQuery(looped, b)).rcode).toBe('FORMERR');
  });

  it('answers SERVFAIL once the block is used up', () => {
    const exhausted: NameBook = { addressFor: () => 'exhausted', refused: () => {}, invalid: () => {} };
    expect(decode(answerQuery(query('api.example.com'), exhausted)).rcode).toBe('SERVFAIL');
  });
});

describe('DnsResponder on real sockets', () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const cleanup of cleanups.splice(0)) cleanup();
  });

  it("serves UDP and TCP to Node's own resolver", async () => {
    const responder = new DnsResponder(book());
    cleanups.push(() => responder.close());
    const udp = createSocket('udp4');
    await new Promise<void>((done) => udp.bind(0, '127.0.0.1', done));
    responder.attachUdp(udp);
    const resolver = new Resolver({ timeout: 2000, tries: 1 });
    resolver.setServers([`127.0.0.1:${udp.address().port}`]);
    expect(await resolver.resolve4('api.example.com')).toEqual(['127.77.0.2']);
    await expect(resolver.resolve4('example.org')).rejects.toMatchObject({ code: 'ENOTFOUND' });

    const tcp = createServer();
    await new Promise<void>((done) => tcp.listen(0, '127.0.0.1', done));
    responder.attachTcp(tcp);
    const socket = connect((tcp.address() as { port: number }).port, '127.0.0.1');
    const framed = dnsPacket.streamEncode({
      type: 'query',
      id: 5,
      questions: [{ type: 'A', name: 'x.cdn.example.net' }],
    });
    socket.write(Buffer.concat([framed, framed]));
    const replies: dnsPacket.Packet[] = [];
    let buffered = Buffer.alloc(0);
    await new Promise<void>((done) =>
      socket.on('data', (chunk: Buffer) => {
        buffered = Buffer.concat([buffered, chunk]);
        while (buffered.length >= 2 && buffered.length >= 2 + buffered.readUInt16BE(0)) {
          const length = buffered.readUInt16BE(0);
          replies.push(dnsPacket.decode(buffered.subarray(2, 2 + length)));
          buffered = buffered.subarray(2 + length);
        }
        if (replies.length === 2) done();
      }),
    );
    socket.destroy();
    expect(replies.map((r) => (r.answers?.[0] as { data?: string } | undefined)?.data)).toEqual([
      '127.77.0.3',
      '127.77.0.3',
    ]);
  });
});
