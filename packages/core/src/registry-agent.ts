import type { LookupAddress } from 'node:dns';
import { readFileSync } from 'node:fs';
import type { Agent } from 'node:http';
import type { LookupFunction } from 'node:net';
import { nodeUsesOtherRoots, registryCa } from './registry-ca.js';

/** The TLS trust npm itself would use for the registry (its cafile, NODE_EXTRA_CA_CERTS, strict-ssl). */
export interface RegistryTrust {
  /** PEM files trusted on top of Node's own roots. */
  readonly caFiles?: readonly (string | undefined)[];
  /** `false` only when npm's `strict-ssl` is off. */
  readonly strictSsl?: boolean;
}

/**
 * Many questions to one registry (an install's tarballs vouched one by one): the TLS trust is
 * built once, as one secure context, and connections are kept between questions, at most
 * `maxSockets` at once. Without it each question parses the CA bundle again, makes a TLS context
 * of its own and shakes hands anew (about a second for a hundred questions on a busy machine).
 * The registry's name is looked up once for all connections, as npm's own agent caches it: many
 * lookups at once can stall for the resolver's timeout (5 s) where one does not.
 */
export interface RegistryAgent {
  /** The registry's protocol (`https:` or `http:`): the agent serves no other. */
  readonly protocol: string;
  readonly agent: Agent;
  /** Ends every connection, idle or busy; a question still in flight fails. Idempotent. */
  close(): void;
}

/** The agent for questions to `registry`, trusting what npm trusts (see registryTlsCa). */
export async function registryAgent(
  registry: string,
  trust: RegistryTrust,
  maxSockets: number,
): Promise<RegistryAgent> {
  const { protocol } = new URL(registry);
  const sockets = Math.max(1, Math.min(64, Math.floor(maxSockets)));
  // Idle connections are dropped soon; none outlives close().
  const common = {
    keepAlive: true,
    maxSockets: sockets,
    maxFreeSockets: sockets,
    timeout: 30_000,
    lookup: await sharedLookup(),
  };
  let agent: Agent;
  if (protocol === 'http:') {
    const { Agent: HttpAgent } = await import('node:http');
    agent = new HttpAgent(common);
  } else if (protocol === 'https:') {
    const [{ Agent: HttpsAgent }, { createSecureContext }] = await Promise.all([
      import('node:https'),
      import('node:tls'),
    ]);
    const ca = await registryTlsCa(trust);
    agent = new HttpsAgent({
      ...common,
      ...(ca ? { secureContext: createSecureContext({ ca }) } : {}),
      rejectUnauthorized: trust.strictSsl !== false,
    });
  } else {
    throw new TypeError(`not an http(s) registry: ${protocol}`);
  }
  return { protocol, agent, close: () => agent.destroy() };
}

/** A lookup that asks the resolver once per name and hands every connection that answer. */
async function sharedLookup(): Promise<LookupFunction> {
  const { lookup } = await import('node:dns/promises');
  const answers = new Map<string, Promise<LookupAddress[]>>();
  return (hostname, options, callback) => {
    let answer = answers.get(hostname);
    if (!answer) {
      answer = lookup(hostname, { all: true });
      answers.set(hostname, answer);
      // A failed lookup is not kept: the next connection asks again.
      answer.catch(() => answers.delete(hostname));
    }
    answer.then(
      (all) => {
        const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : options.family;
        const fit = family ? all.filter((a) => a.family === family) : all;
        const first = fit[0];
        if (options.all) callback(null, fit);
        else if (first) callback(null, first.address, first.family);
        else callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };
}

/** The `ca` a registry question hands TLS: Node's roots and npm's CA files (undefined: Node's default store). */
export async function registryTlsCa(trust: RegistryTrust): Promise<string[] | undefined> {
  const extra = (trust.caFiles ?? []).flatMap((file) => {
    const text = readText(file);
    return text === undefined ? [] : [text];
  });
  if (extra.length === 0) return undefined;
  const { rootCertificates } = await import('node:tls');
  return registryCa(extra, {
    roots: rootCertificates,
    extra: readText(process.env.NODE_EXTRA_CA_CERTS),
    otherRoots: nodeUsesOtherRoots(process.execArgv, process.env.NODE_OPTIONS),
  });
}

function readText(file: string | undefined): string | undefined {
  if (!file) return undefined;
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}
