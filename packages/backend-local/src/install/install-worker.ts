// The background install's entry file: `launch.ts` starts it as `./install-worker.js` beside
// itself. The bundled app builds this file as an entry of its own under the same name.
import { runInstallWorker } from './worker.js';

void runInstallWorker();
