import { runConformanceSuite } from '@mcpsandbox/core/conformance';
import { createNoneBackend } from '../src/index.js';

runConformanceSuite({ name: 'none', createBackend: () => createNoneBackend() });
