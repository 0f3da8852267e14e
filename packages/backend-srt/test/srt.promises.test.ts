import { runPromiseSuite } from '@mcpsandbox/host-side/promises';
import { createSrtBackend } from '../src/index.js';
import { BIN } from './cli.js';

// The attacks that hold every OS backend's promises, against srt (local runs the same suite).
runPromiseSuite({
  name: 'srt',
  createBackend: (options) => createSrtBackend(options),
  cli: { bin: BIN, backend: 'srt' },
});
