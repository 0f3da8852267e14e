import { runConformanceSuite } from '@mcpsandbox/core/conformance';
import { createFakeBackend, fakeProbe } from '../src/index.js';

runConformanceSuite({ name: 'fake', createBackend: () => createFakeBackend(), probe: fakeProbe });
