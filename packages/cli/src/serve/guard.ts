import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { SandboxError, UsageError } from '@mcpsandbox/core';

/** An HTTP refusal: the status, its JSON-RPC error text, and headers such as Retry-After. */
export class HttpRefusal extends SandboxError {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** The JSON-RPC error code of the body. */
  readonly rpcCode: number;
  constructor(status: number, message: string, headers: Record<string, string> = {}, rpcCode = -32000) {
    super('E_HTTP_REFUSED', message);
    this.status = status;
    this.headers = headers;
    this.rpcCode = rpcCode;
  }
}

/** A bearer token, held as its digest so that comparison takes the same time whatever is sent. */
export class BearerToken {
  readonly #digest: Buffer;
  /** The token itself, only for redaction and the one print of a generated token. */
  readonly value: string;
  constructor(value: string) {
    this.value = value;
    this.#digest = createHash('sha256').update(value).digest();
  }
  /** Compares `Authorization: Bearer <x>` in constant time (over digests, so length leaks nothing). */
  admits(header: string | undefined): boolean {
    const match = /^Bearer +(\S+) *$/i.exec(header ?? '');
    const sent = createHash('sha256')
      .update(match?.[1] ?? '')
      .digest();
    return timingSafeEqual(sent, this.#digest) && match !== null;
  }
}

const MIN_TOKEN_CHARS = 16;

/** The token from `--token-file` (its first line), or a new random one. */
export function loadToken(file: string | undefined): { token: BearerToken; generated: boolean } {
  if (file === undefined)
    return { token: new BearerToken(randomBytes(32).toString('base64url')), generated: true };
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(
      `--token-file ${file}: cannot read it (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  const value = text.split(/\r?\n/)[0]?.trim() ?? '';
  if (value.length < MIN_TOKEN_CHARS || !/^[\x21-\x7e]+$/.test(value)) {
    throw new UsageError(
      `--token-file ${file}: the token must be one line of at least ${MIN_TOKEN_CHARS} printable characters without spaces; make one with: openssl rand -base64 32`,
    );
  }
  return { token: new BearerToken(value), generated: false };
}

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];

/**
 * Refuses what a web page could make a browser send (DNS rebinding, cross-site requests): the
 * Host must name this loopback listener, an Origin, when sent, must be one of its own.
 */
export function checkOrigin(req: IncomingMessage, port: number): void {
  const allowedHosts = new Set(LOOPBACK_NAMES.map((name) => `${name}:${port}`));
  const host = req.headers.host?.toLowerCase();
  if (host === undefined || !allowedHosts.has(host)) {
    throw new HttpRefusal(403, 'Forbidden: the Host header does not name this loopback server');
  }
  const origin = req.headers.origin;
  if (origin === undefined) return;
  const allowedOrigins = new Set(LOOPBACK_NAMES.map((name) => `http://${name}:${port}`));
  if (!allowedOrigins.has(origin.toLowerCase())) {
    throw new HttpRefusal(403, 'Forbidden: requests from this Origin are not allowed');
  }
}

export function checkToken(req: IncomingMessage, token: BearerToken): void {
  if (!token.admits(req.headers.authorization)) {
    throw new HttpRefusal(401, 'Unauthorized: send Authorization: Bearer <token>', {
      'www-authenticate': 'Bearer realm="mcp-sandbox"',
    });
  }
}

/** Reads the body, refusing it with 413 once it passes `limit` bytes (before reading the rest). */
export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    throw new HttpRefusal(413, `Payload Too Large: the limit is ${limit} bytes`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new HttpRefusal(413, `Payload Too Large: the limit is ${limit} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** A session id: 256 random bits, so that one cannot be guessed from another. */
export function newSessionId(): string {
  return randomBytes(32).toString('base64url');
}
