import { runConformanceSuite } from '@mcpsandbox/core/conformance';
import { createLocalBackend } from '../src/index.js';

runConformanceSuite({ name: 'local', createBackend: () => createLocalBackend() });
