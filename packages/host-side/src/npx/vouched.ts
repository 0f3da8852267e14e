/**
 * Which tarballs of an install's lock the registry vouches for. The lock is the fetch step's
 * output and names tarballs by integrity; a package's own `npm-shrinkwrap.json` chooses those
 * names, so the lock may name any tarball at all, a private one the host's npm cache holds
 * among them. Only an integrity the configured registry itself gives, asked without
 * credentials, for that entry's name@version is taken: a tarball the registry serves to anyone.
 */
import { type RegistryAgent, type RegistryTrust, registryAgent, resolveFromRegistry } from '@mcpsandbox/core';
import { type OpenDir, readFileAt } from '../host-fs.js';

/** One registry tarball of the lock: its name and exact version, and its sha512 integrity. */
export interface LockedTarball {
  readonly name: string;
  readonly version: string;
  readonly integrity: string;
}

const MAX_LOCK_BYTES = 32 * 2 ** 20;
/** More entries than any real tree (the playwright server has about 150): the rest is not seeded. */
export const MAX_LOCKED = 5_000;
/** npm's names, old ones with capitals included. */
const NAME = /^(?:@[A-Za-z0-9][A-Za-z0-9._~-]{0,213}\/)?[A-Za-z0-9][A-Za-z0-9._~-]{0,213}$/;
const VERSION = /^\d{1,9}\.\d{1,9}\.\d{1,9}(?:-[0-9A-Za-z.-]{1,64})?(?:\+[0-9A-Za-z.-]{1,64})?$/;
/** One sha512 and nothing else: the only name npm's content store gives a registry tarball. */
export const SHA512 = /^sha512-[A-Za-z0-9+/]{86}==$/;
/** `node_modules/a`, `node_modules/@s/a/node_modules/b`: the last name is the entry's own. */
const LOCK_PATH = /^(?:.*\/)?node_modules\/((?:@[^/]+\/)?[^/]+)$/;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The registry tarballs `package-lock.json` in `prefix` names (read no-follow, bounded, parsed
 * in full), one per integrity. Anything else (links, git, files, other hashes, malformed names or
 * versions) is left out: npm downloads it as it would anyway. Empty when there is no valid lock.
 */
export function lockedTarballs(prefix: OpenDir): LockedTarball[] {
  let lock: unknown;
  try {
    const bytes = readFileAt(prefix, ['package-lock.json'], MAX_LOCK_BYTES);
    if (!bytes) return [];
    lock = JSON.parse(bytes.toString('utf8'));
  } catch {
    return [];
  }
  const packages = isObject(lock) ? lock.packages : undefined;
  if (!isObject(packages)) return [];
  const found = new Map<string, LockedTarball>();
  for (const [path, entry] of Object.entries(packages)) {
    if (found.size >= MAX_LOCKED) break;
    if (!isObject(entry) || entry.link === true) continue;
    const own = LOCK_PATH.exec(path)?.[1];
    // An alias (`"a": "npm:b@1"`) records the real name beside the path.
    const name = typeof entry.name === 'string' ? entry.name : own;
    const { version, integrity } = entry;
    if (name === undefined || !NAME.test(name) || typeof version !== 'string' || !VERSION.test(version))
      continue;
    if (typeof integrity !== 'string' || !SHA512.test(integrity) || found.has(integrity)) continue;
    found.set(integrity, { name, version, integrity });
  }
  return [...found.values()];
}

export interface VouchOptions {
  readonly trust: RegistryTrust;
  /** At most this many questions in flight (default 16). */
  readonly concurrency?: number;
  /** Per question (default 15 s); one that takes longer only leaves its tarball out. */
  readonly timeoutMs?: number;
  /** No question is asked after this long (default 60 s): what is left is downloaded by npm. */
  readonly totalMs?: number;
  /** Told of each tarball as soon as it is vouched for (the seeding copies it then). */
  readonly onVouched?: (tarball: LockedTarball) => void;
  /** No question is asked, and nothing more is told, once aborted. */
  readonly signal?: AbortSignal;
  /** Connections opened ahead ({@link warmRegistryAgent}); closed by the vouch, whatever happens. */
  readonly agent?: Promise<RegistryAgent | undefined>;
}

/**
 * An agent for a vouch to come, its `concurrency` connections opened now, while the resolve runs
 * (16 cold connections cost the vouch a fifth of a second of handshakes and waits). `probe`, a
 * name@version the registry serves (the package being installed), is asked once; the agent is
 * given then, and the further connections are opened behind it, resuming the first one's TLS
 * session. Undefined when the registry cannot be reached; the caller closes it.
 */
export async function warmRegistryAgent(
  registry: string,
  trust: RegistryTrust,
  probe: { readonly name: string; readonly version: string },
  concurrency = 32,
): Promise<RegistryAgent | undefined> {
  let agent: RegistryAgent;
  try {
    agent = await registryAgent(registry, trust, concurrency);
  } catch {
    return undefined;
  }
  const ask = () =>
    resolveFromRegistry(
      registry,
      probe.name,
      { kind: 'version', value: probe.version },
      { agent, versionDocument: true, timeoutMs: 5_000 },
    ).catch(() => undefined);
  await ask();
  // As many at once as connections wanted (one reuses the first). Not waited for: a vouch that
  // starts meanwhile has its questions queued for these connections.
  for (let i = 0; i < concurrency; i++) void ask();
  return agent;
}

/**
 * The tarballs whose integrity `registry` gives for their name@version now (the version's own
 * document, else the abbreviated packument; no credentials), one question per tarball; an error, another integrity or no such
 * version leaves the tarball out (npm then downloads what the lock names, or fails as it would).
 * The questions share one TLS setup and at most `concurrency` connections, all closed on return.
 */
export async function vouchedByRegistry(
  registry: string,
  locked: readonly LockedTarball[],
  options: VouchOptions,
): Promise<LockedTarball[]> {
  const vouched: LockedTarball[] = [];
  const ahead = await options.agent;
  if (locked.length === 0 || options.signal?.aborted) {
    ahead?.close();
    return vouched;
  }
  // As many questions at once as connections opened ahead (they cost nothing more now).
  const wanted = options.concurrency ?? (ahead ? ahead.agent.maxSockets : 16);
  const workers = Math.max(1, Math.min(wanted, locked.length));
  let agent: RegistryAgent;
  try {
    agent = ahead ?? (await registryAgent(registry, options.trust, workers));
  } catch {
    return vouched;
  }
  let next = 0;
  const until = Date.now() + (options.totalMs ?? 60_000);
  // Each version's own document first (a few KB; a packument can be MBs). A registry without
  // them, or that disagrees with its packument, is asked by packument from then on.
  let byVersion = true;
  const ask = async (tarball: LockedTarball, versionDocument: boolean): Promise<boolean> =>
    !options.signal?.aborted &&
    resolveFromRegistry(
      registry,
      tarball.name,
      { kind: 'version', value: tarball.version },
      { agent, versionDocument, timeoutMs: options.timeoutMs ?? 15_000 },
    ).then(
      (said) => said.integrity === tarball.integrity,
      () => false,
    );
  const worker = async (limit = locked.length) => {
    while (next < limit && Date.now() < until && !options.signal?.aborted) {
      const tarball = locked[next++] as LockedTarball;
      let ok = byVersion && (await ask(tarball, true));
      if (!ok) {
        ok = await ask(tarball, false);
        if (ok) byVersion = false;
      }
      if (!ok || options.signal?.aborted) continue;
      vouched.push(tarball);
      try {
        options.onVouched?.(tarball);
      } catch {
        // the listener's own failure (a copy that could not be made) leaves the answer as it is
      }
    }
  };
  // Aborted: the questions in flight end now, not at their timeout.
  const stop = () => agent.close();
  options.signal?.addEventListener('abort', stop, { once: true });
  try {
    // The first question alone: the other connections then resume its TLS session rather than
    // each making a full handshake (connections opened ahead are ready already).
    if (!ahead) await worker(1);
    await Promise.all(Array.from({ length: workers }, () => worker()));
  } finally {
    options.signal?.removeEventListener('abort', stop);
    agent.close();
  }
  return vouched;
}
