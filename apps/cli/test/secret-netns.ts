/**
 * A network namespace of the test's own for `--secret` on the wire (needs root): the built
 * binary runs in it, the bound names resolve (a hosts file bound over /etc/hosts) to a
 * public-looking address of a second namespace joined by a veth pair, where the test's HTTPS echo
 * upstream (fixtures/secret-wire/upstream.mjs) records what each request carried. Nothing leaves
 * this host.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseHostName } from '@mcpsandbox/core';
import { SessionCa } from '@mcpsandbox/egress/secrets';

export const FIXTURES = new URL('fixtures/secret-wire/', import.meta.url).pathname.replace(/\/$/, '');
export const UPSTREAM_ADDRESS = '93.184.216.34';

export const canUnshare =
  process.getuid?.() === 0 && spawnSync('unshare', ['--net', '--mount', 'true']).status === 0;

export interface Upstream {
  readonly cert: string;
  readonly key: string;
  /** The CA the bridge verifies the upstream with (NODE_EXTRA_CA_CERTS of the binary). */
  readonly ca: string;
  readonly hosts: string;
}

/** A certificate for `names` from a throwaway CA, and a hosts file naming the upstream's address. */
export async function makeUpstream(dir: string, names: readonly string[]): Promise<Upstream> {
  chmodSync(dir, 0o755);
  const hosts = names.map((name) => {
    const host = parseHostName(name);
    if (host === undefined) throw new Error(`bad test host ${name}`);
    return host;
  });
  const ca = await SessionCa.create(hosts);
  const leaf = await ca.leaf(hosts[0]!);
  const files = {
    cert: join(dir, 'upstream.pem'),
    key: join(dir, 'upstream.key'),
    ca: join(dir, 'upstream-ca.pem'),
    hosts: join(dir, 'hosts'),
  };
  writeFileSync(files.cert, leaf.cert);
  writeFileSync(files.key, leaf.key, { mode: 0o600 });
  writeFileSync(files.ca, ca.pem);
  writeFileSync(files.hosts, `127.0.0.1 localhost\n${UPSTREAM_ADDRESS} ${names.join(' ')}\n`);
  return files;
}

/** `unshare` and its arguments: `command` runs in the namespace, the upstream beside it. */
export function inNamespace(
  upstream: Upstream,
  seenFile: string,
  readyFile: string,
  command: readonly string[],
): { readonly command: string; readonly args: string[] } {
  return {
    command: 'unshare',
    args: [
      '--net',
      '--mount',
      '--propagation',
      'private',
      join(FIXTURES, 'netns.sh'),
      UPSTREAM_ADDRESS,
      upstream.hosts,
      upstream.cert,
      upstream.key,
      seenFile,
      readyFile,
      '--',
      ...command,
    ],
  };
}

export interface Seen {
  readonly url: string;
  readonly host?: string;
  readonly authorization?: string;
}

/** What the upstream recorded, one request a line. */
export function seenBy(seenFile: string): Seen[] {
  if (!existsSync(seenFile)) return [];
  return readFileSync(seenFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Seen);
}
