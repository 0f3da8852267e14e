export { builtInBackends, DEFAULT_BACKEND } from './backends.js';
export { main } from './main.js';
