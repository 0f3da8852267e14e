import { runConformanceSuite } from '@mcpsandbox/core/conformance';
import { createVmBackend, vmProbe } from '../src/index.js';

// The probe runs as a sandboxed app on the raw `io` API (see src/probe-app.ts).
runConformanceSuite({ name: 'vm (process)', createBackend: () => createVmBackend(), probe: vmProbe });
runConformanceSuite({
  name: 'vm (in-process-trusted)',
  createBackend: () => createVmBackend({ isolation: 'in-process-trusted' }),
  probe: vmProbe,
});
