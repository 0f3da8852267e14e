export { SbplSyntaxError, SeatbeltPathError } from './errors.js';
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
