import { runConformanceSuite } from '@mcpsandbox/core/conformance';
import { createSrtBackend } from '../src/index.js';

runConformanceSuite({ name: 'srt', createBackend: () => createSrtBackend() });
