// The state, tree-measure and copy-in cases again, with the portable strategy macOS uses (no
// /proc/self/fd): each host-side walk must work, and refuse links, without /proc.
import { useFdPathStrategy } from './fd-paths.js';

useFdPathStrategy('portable');
await import('./state.test.js');
await import('./tree-usage.test.js');
await import('../test/copy-in.test.js');
