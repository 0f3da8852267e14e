import { describe, expect, it } from 'vitest';
import * as api from '../src/index.js';

describe('public exports', () => {
  it('are exactly these', () => {
    expect(Object.keys(api).sort()).toEqual([
      'DenialReporter',
      'DnsResponder',
      'EgressProxy',
      'SANDBOX_DNS_ADDRESS',
      'SecretReporter',
      'StandInWatch',
      'SyntheticNames',
      'TransparentEgress',
      'addressRefusal',
      'canonicalIp',
      'decide',
      'hostAddresses',
      'matchGrant',
      'nameIsGranted',
      'parseGrant',
      'transparentPorts',
    ]);
  });
});
