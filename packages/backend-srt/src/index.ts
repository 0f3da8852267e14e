export { createSrtBackend, createSrtBackend as createBackend, type SrtBackendOptions } from './backend.js';
export { enforcedBy, probeSrt, SRT_VERSION } from './engine.js';
export { checkPathMounts, type SrtPlatform, srtPlatformOf, userDataRoots } from './policy.js';
