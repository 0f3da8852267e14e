export {
  createSeatbeltBackend as createBackend,
  createSeatbeltBackend,
  SEATBELT_FACTS,
  type SeatbeltBackendOptions,
} from './backend.js';
export { SbplSyntaxError, SeatbeltPathError } from './errors.js';
export { type Denial, denialLine, grantFor, logStreamArgs, parseDenialLine } from './log/denials.js';
export { probeSeatbelt, type SeatbeltProbe } from './probe.js';
export { type ClosureIo, type DylibClosure, dylibClosure, parseOtoolL } from './profile/dylib-closure.js';
export { generateProfile, TAG_PREFIX } from './profile/generate.js';
export { profilePath, type SeatbeltPlan } from './profile/plan.js';
export { MACH_ALLOWLIST } from './profile/system.js';
export {
  type Action,
  type Decision,
  decide,
  type Profile,
  parseProfile,
  type Query,
  type Rule,
} from './sbpl/evaluate.js';
export { sbplString } from './sbpl/literal.js';
