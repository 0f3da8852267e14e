import type { Socket as UdpSocket } from 'node:dgram';
import type { Server as NetServer, Socket } from 'node:net';
import { type HostName, parseHostName } from '@mcpsandbox/core';
import * as dnsPacket from 'dns-packet';

/** What the responder needs to know about one name. */
export interface NameBook {
  /** The synthetic address for a granted name; undefined when the name is not granted. */
  addressFor(name: HostName): string | undefined | 'exhausted';
  /** Called once per refused lookup of a valid name. */
  refused(name: HostName): void;
  /** Called once per question whose name is not a valid host name (a NUL, a space, a `;`). */
  invalid(): void;
}

const QUERY = 0;
const RCODE = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 } as const;
const MAX_QUERY_BYTES = 4096;
const TTL_SECONDS = 60;

/**
 * Answers one DNS query: A for a granted name gets its synthetic address, AAAA for it gets an
 * empty answer (the sandbox has no IPv6 route), any other name NXDOMAIN, and everything else
 * (other opcodes, classes or types, several questions, responses) a refusal. A question name is
 * parsed as a host name before anything else looks at it: one that is not (a label with a NUL, a
 * dot or a byte outside LDH) is refused, and never matched, recorded by name or resolved. Bytes that do not
 * parse as a DNS message get FORMERR when their header can be read, and no answer otherwise.
 */
export function answerQuery(query: Buffer, book: NameBook): Buffer | undefined {
  if (query.length < 12 || query.length > MAX_QUERY_BYTES) return undefined;
  const id = query.readUInt16BE(0);
  const headerFlags = query.readUInt16BE(2);
  if (headerFlags & 0x8000) return undefined; // a response: never answer one
  const opcode = (headerFlags >> 11) & 0xf;
  const rd = headerFlags & dnsPacket.RECURSION_DESIRED;
  const reply = (rcode: number, questions: dnsPacket.Question[] = [], answers: dnsPacket.Answer[] = []) =>
    dnsPacket.encode({
      type: 'response',
      id,
      flags: (opcode << 11) | dnsPacket.AUTHORITATIVE_ANSWER | dnsPacket.RECURSION_AVAILABLE | rd | rcode,
      questions,
      answers,
    });
  if (opcode !== QUERY) return reply(RCODE.NOTIMP);
  let packet: dnsPacket.DecodedPacket;
  try {
    packet = dnsPacket.decode(query);
  } catch {
    return reply(RCODE.FORMERR);
  }
  const questions = packet.questions ?? [];
  const [question] = questions;
  if (questions.length !== 1 || question === undefined) return reply(RCODE.FORMERR);
  const echo = [{ type: question.type, name: question.name, class: question.class ?? 'IN' }];
  if (question.class !== undefined && question.class !== 'IN') return reply(RCODE.REFUSED, echo);
  if (question.type !== 'A' && question.type !== 'AAAA') return reply(RCODE.REFUSED, echo);
  const name = parseHostName(question.name);
  if (name === undefined) {
    book.invalid();
    return reply(RCODE.REFUSED, echo);
  }
  const address = book.addressFor(name);
  if (address === undefined) {
    book.refused(name);
    return reply(RCODE.NXDOMAIN, echo);
  }
  if (address === 'exhausted') return reply(RCODE.SERVFAIL, echo);
  if (question.type === 'AAAA') return reply(RCODE.NOERROR, echo);
  return reply(RCODE.NOERROR, echo, [
    { type: 'A', name: question.name, class: 'IN', ttl: TTL_SECONDS, data: address },
  ]);
}

/**
 * Serves DNS on sockets created inside the sandbox's network namespace and handed to the host:
 * a UDP socket and a TCP listener (two-byte length framing), both on the sandbox's resolver
 * address. Every byte comes from the sandbox: queries are bounded, parsed in full or refused.
 */
export class DnsResponder {
  readonly #book: NameBook;
  readonly #udp = new Set<UdpSocket>();
  readonly #tcp = new Set<NetServer>();
  readonly #connections = new Set<Socket>();

  constructor(book: NameBook) {
    this.#book = book;
  }

  attachUdp(socket: UdpSocket): void {
    this.#udp.add(socket);
    socket.on('error', () => {});
    socket.on('message', (message, remote) => {
      const answer = answerQuery(message, this.#book);
      if (answer) socket.send(answer, remote.port, remote.address);
    });
  }

  attachTcp(server: NetServer): void {
    this.#tcp.add(server);
    server.on('error', () => {});
    server.on('connection', (socket: Socket) => {
      if (this.#connections.size >= MAX_TCP_CONNECTIONS) {
        socket.destroy();
        return;
      }
      this.#connections.add(socket);
      socket.once('close', () => this.#connections.delete(socket));
      socket.on('error', () => socket.destroy());
      socket.setTimeout(10_000, () => socket.destroy());
      let buffered = Buffer.alloc(0);
      socket.on('data', (chunk: Buffer) => {
        buffered = Buffer.concat([buffered, chunk]);
        while (buffered.length >= 2) {
          const length = buffered.readUInt16BE(0);
          if (length > MAX_QUERY_BYTES) {
            socket.destroy();
            return;
          }
          if (buffered.length < 2 + length) break;
          const answer = answerQuery(buffered.subarray(2, 2 + length), this.#book);
          buffered = buffered.subarray(2 + length);
          if (!answer) {
            socket.destroy();
            return;
          }
          const framed = Buffer.alloc(2 + answer.length);
          framed.writeUInt16BE(answer.length, 0);
          answer.copy(framed, 2);
          socket.write(framed);
        }
      });
    });
  }

  close(): void {
    for (const socket of this.#udp) {
      try {
        socket.close();
      } catch {
        // already closed
      }
    }
    for (const server of this.#tcp) server.close();
    for (const socket of this.#connections) socket.destroy();
    this.#udp.clear();
    this.#tcp.clear();
    this.#connections.clear();
  }
}

const MAX_TCP_CONNECTIONS = 64;
