export { type BackendEntry, type BackendRegistry, resolveBackend } from './backends.js';
export { addRunOptions, announce, planRun, type RunFlags, type RunPlan } from './commands/run.js';
export type { CliIo, CliOptions, SignalSource } from './options.js';
export { parseAllowNet, parseMount, parseSize } from './parse.js';
export { createProgram, runCli } from './program.js';
export { reportError } from './report.js';
