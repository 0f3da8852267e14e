import { fileURLToPath } from 'node:url';
import { hostileBytesCases } from './hostile-bytes-cases.js';

// The hostile-bytes corpus played by a Node.js server (fixtures/hostile-server.mjs), unsandboxed:
// the bridge's own handling of the bytes. hostile-bytes-python.e2e.test.ts plays it from Python.
const HOSTILE = fileURLToPath(new URL('./fixtures/hostile-server.mjs', import.meta.url));

hostileBytesCases({ name: 'Node.js', runArgs: ['--backend', 'none'], argv: [process.execPath, HOSTILE] });
