import { BackendUnavailableError, type NetworkSpec } from '@mcpsandbox/core';
import { E2B_ERROR_CODES } from './errors.js';

/** The slice of the SDK's create options that decides egress. */
export interface E2BEgress {
  readonly allowInternetAccess?: boolean;
  readonly network?: { readonly allowOut: string[]; readonly denyOut: string[] };
  /** What a trace should say about the decision. */
  readonly summary: string;
}

const ALL_TRAFFIC = '0.0.0.0/0';
const HOST = /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i;
const IPV4 = /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}(\/(3[0-2]|[12]?\d))?$/;

/**
 * Maps core's egress grants onto E2B's sandbox network rules. Nothing granted means no egress;
 * `*` means E2B's default (open). Anything E2B cannot express exactly (ports, IPv6) is refused
 * rather than widened.
 */
export function toE2BEgress(network: NetworkSpec | undefined): E2BEgress {
  const allow = network?.allow ?? [];
  if (allow.includes('*')) return { summary: 'unrestricted (E2B default)' };
  if (allow.length === 0) return { allowInternetAccess: false, summary: 'none' };
  const allowOut: string[] = [];
  for (const rule of allow) allowOut.push(toAllowOut(rule));
  return {
    network: { allowOut: [...new Set(allowOut)], denyOut: [ALL_TRAFFIC] },
    summary: `only ${allowOut.join(', ')}`,
  };
}

function toAllowOut(rule: string): string {
  const value = rule.trim();
  if (IPV4.test(value)) return value;
  if (value.startsWith('[') || value.includes('::')) {
    throw unsupported(rule, 'E2B egress rules take IPv4 addresses, CIDR blocks and host names only');
  }
  const port = /^(.*):(\d{1,5})$/.exec(value);
  if (port) {
    throw unsupported(
      rule,
      `E2B egress rules cannot restrict ports; grant '${port[1]}' (all ports) if that is acceptable`,
    );
  }
  if (!HOST.test(value)) throw unsupported(rule, 'expected host, *.suffix, an IPv4 address or a CIDR block');
  return value.toLowerCase();
}

function unsupported(rule: string, why: string): BackendUnavailableError {
  return new BackendUnavailableError(`cannot grant network access to '${rule}' on e2b: ${why}`, {
    code: E2B_ERROR_CODES.networkUnsupported,
  });
}
