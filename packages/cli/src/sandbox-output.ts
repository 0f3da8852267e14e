import { Writable } from 'node:stream';

/** What starts every line that comes from inside the sandbox, as in mcp-sandbox 0.2. */
export const SANDBOX_PREFIX = '[sandbox] ';

const NL = 0x0a;
const CR = 0x0d;
const TAB = 0x09;
const C2 = 0xc2;

/**
 * The stream the bridge writes the sandbox's output to (the server's stderr, setup and install
 * output, diverted stdout), in front of this process's stderr. Each line gets {@link SANDBOX_PREFIX},
 * so the server's lines are told apart from mcp-sandbox's own (`mcp-sandbox: …`), and control
 * characters are shown escaped (`\x1b`, `\r`, `\u009b`): otherwise a carriage return or an
 * escape sequence could paint over the prefix and pass the server's words off as ours.
 * Bytes are handled as bytes; a UTF-8 character split across chunks passes through intact.
 */
export function sandboxOutput(out: Writable): Writable {
  const prefix = Buffer.from(SANDBOX_PREFIX);
  let atLineStart = true;
  let pendingCr = false;
  let pendingC2 = false;
  const encode = (chunk: Uint8Array): Buffer => {
    const parts: number[] = [];
    const text = (s: string) => {
      for (const c of Buffer.from(s)) parts.push(c);
    };
    const startLine = () => {
      if (atLineStart) {
        for (const c of prefix) parts.push(c);
        atLineStart = false;
      }
    };
    for (const byte of chunk) {
      if (pendingCr) {
        pendingCr = false;
        if (byte !== NL) {
          startLine();
          text('\\r');
        }
      }
      if (pendingC2) {
        pendingC2 = false;
        startLine();
        // U+0080–U+009F are C1 controls (U+009B is a CSI for some terminals).
        if (byte >= 0x80 && byte <= 0x9f) {
          text(`\\u00${byte.toString(16)}`);
          continue;
        }
        parts.push(C2);
        if (byte >= 0xa0 && byte <= 0xbf) {
          parts.push(byte);
          continue;
        }
      }
      if (byte === NL) {
        startLine();
        parts.push(NL);
        atLineStart = true;
      } else if (byte === CR) {
        pendingCr = true; // "\r\n" is a line end; a lone "\r" is shown
      } else if (byte === C2) {
        pendingC2 = true;
      } else if ((byte < 0x20 && byte !== TAB) || byte === 0x7f) {
        startLine();
        text(`\\x${byte.toString(16).padStart(2, '0')}`);
      } else {
        startLine();
        parts.push(byte);
      }
    }
    return Buffer.from(parts);
  };
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      const encoded = encode(chunk);
      if (encoded.length === 0) return done();
      out.write(encoded, (error) => done(error ?? null));
    },
    final(done) {
      const rest: string[] = [];
      if (pendingC2) rest.push('\\u00c2');
      if (pendingCr) rest.push('\\r');
      if (rest.length === 0) return done();
      out.write(`${atLineStart ? SANDBOX_PREFIX : ''}${rest.join('')}\n`, () => done());
    },
  });
}
