/** `@mcpsandbox/egress/secrets`: what a session that binds a secret loads, and nothing else does. */
export { type LeafCertificate, SessionCa } from './ca.js';
export { type SecretTrust, type SecretTrustOptions, writeSecretTrust } from './trust.js';
