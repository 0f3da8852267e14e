import { BackendUnavailableError, type NetworkSpec, parseHostName } from '@mcpsandbox/core';
import { E2B_ERROR_CODES } from './errors.js';

/** The slice of the SDK's create options that decides egress. */
export interface E2BEgress {
  readonly allowInternetAccess?: boolean;
  readonly network?: { readonly allowOut: string[]; readonly denyOut: string[] };
  /** What a trace should say about the decision. */
  readonly summary: string;
}

const ALL_TRAFFIC = '0.0.0.0/0';
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
    // The suggestion is built from the validated host, never from the rule's text.
    const host = hostRule(port[1] ?? '');
    throw unsupported(
      rule,
      `E2B egress rules cannot restrict ports${host ? `; grant '${host}' (all ports) if that is acceptable` : ''}`,
    );
  }
  const host = hostRule(value);
  if (host === undefined) throw unsupported(rule, 'expected host, *.suffix, an IPv4 address or a CIDR block');
  return host;
}

/** `host` or `*.suffix` through core's one host-name parser: E2B is told validated names only. */
function hostRule(text: string): string | undefined {
  if (IPV4.test(text)) return text;
  const suffix = text.startsWith('*.');
  const name = parseHostName(suffix ? text.slice(2) : text);
  if (name === undefined) return undefined;
  return suffix ? `*.${name}` : name;
}

function unsupported(rule: string, why: string): BackendUnavailableError {
  // The rule is the user's flag, quoted as JSON so that no byte of it reaches a terminal raw.
  return new BackendUnavailableError(
    `cannot grant network access to ${JSON.stringify(rule)} on e2b: ${why}`,
    {
      code: E2B_ERROR_CODES.networkUnsupported,
    },
  );
}
