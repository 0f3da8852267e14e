export { createBackend, createE2BBackend, DEFAULT_TEMPLATE, type E2BBackendOptions } from './backend.js';
export { E2B_ERROR_CODES, type E2BErrorCode } from './errors.js';
