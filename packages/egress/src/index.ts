export { addressRefusal, canonicalIp, hostAddresses } from './addresses.js';
export { DnsResponder } from './dns.js';
export {
  DenialReporter,
  nameIsGranted,
  SANDBOX_DNS_ADDRESS,
  SyntheticNames,
  transparentPorts,
} from './egress.js';
export { type Decision, decide, matchGrant, type NetGrant, parseGrant, type Resolver } from './grants.js';
export { EgressProxy, type EgressProxyOptions, type SecretRouting } from './proxy.js';
export { type MisuseWhere, SecretReporter, StandInWatch } from './secrets/watch.js';
export { type Dialer, TransparentEgress, type TransparentEgressOptions } from './transparent.js';
