import { runPromiseSuite } from '@mcpsandbox/host-side/promises';
import { createLocalBackend } from '../src/index.js';
import { BIN } from './binary.js';

// The attacks that hold every OS backend's promises, against local (srt runs the same suite).
runPromiseSuite({
  name: 'local',
  createBackend: (options) => createLocalBackend(options),
  cli: { bin: BIN, backend: 'local' },
});
