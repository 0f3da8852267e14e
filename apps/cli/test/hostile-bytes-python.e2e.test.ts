import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll } from 'vitest';
// @ts-expect-error: a plain .mjs fixture, shared with the servers that replay it
import { corpusLines } from './fixtures/hostile-corpus.mjs';
import { hostileBytesCases } from './hostile-bytes-cases.js';

// The hostile-bytes corpus played by a Python stdio server (Debian's python3, no packages) in the
// local sandbox, as a `uvx` server runs: the same assertions as the Node.js server's.
const HOSTILE = fileURLToPath(new URL('./fixtures/hostile-server.py', import.meta.url));
// As root the sandbox runs as nobody, who must be able to read the corpus.
const dir = mkdtempSync(join(tmpdir(), 'mcp-sandbox-hostile-py-'));
chmodSync(dir, 0o755);
const corpusFile = join(dir, 'corpus.bin');
writeFileSync(corpusFile, Buffer.concat((corpusLines as () => Buffer[])()), { mode: 0o644 });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

hostileBytesCases({
  name: 'Python, local sandbox',
  runArgs: ['--mount', `${dirname(HOSTILE)}:ro`, '--mount', `${dir}:ro`],
  argv: ['/usr/bin/python3', HOSTILE, corpusFile],
});
