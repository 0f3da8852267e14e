export { type BackendEntry, type BackendRegistry, resolveBackend } from './backends.js';
export { parseAllowNet, parseMount, parseSize } from './parse.js';
export { type CliIo, type CliOptions, createProgram, runCli, type SignalSource } from './program.js';
