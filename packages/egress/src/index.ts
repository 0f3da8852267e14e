export { addressRefusal, canonicalIp, hostAddresses } from './addresses.js';
export { answerQuery, DnsResponder, type NameBook } from './dns.js';
export {
  DEFAULT_TRANSPARENT_PORTS,
  DenialReporter,
  INVALID_HOST,
  nameIsGranted,
  SANDBOX_DNS_ADDRESS,
  SYNTHETIC_PREFIX,
  SyntheticNames,
  transparentPorts,
} from './egress.js';
export { type Decision, decide, matchGrant, type NetGrant, parseGrant, type Resolver } from './grants.js';
export { EgressProxy, type EgressProxyOptions } from './proxy.js';
export {
  type Dialer,
  defaultDialer,
  TransparentEgress,
  type TransparentEgressOptions,
} from './transparent.js';
