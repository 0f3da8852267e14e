export { createNoneBackend, NONE_BASELINE_ENV } from './none.js';
