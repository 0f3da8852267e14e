import { join } from 'node:path';
import { SandboxError, UsageError } from './errors.js';
import type { Logger } from './logger.js';
import { PendingBytes } from './pending-bytes.js';
import { type NpxPin, PIN_INTEGRITY, PIN_NAME, PIN_VERSION, readPinLock, updatePinLock } from './pin-lock.js';
import { type RegistryAgent, type RegistryTrust, registryTlsCa } from './registry-agent.js';

export { type NpxPin, PIN_LOCK_VERSION, readPinLock } from './pin-lock.js';
export type { RegistryTrust } from './registry-agent.js';

/**
 * Pinned `npx -y` installs. A new version of a package people run with `npx -y` is how the
 * postmark-mcp and axios incidents arrived. On first install the resolved version and npm
 * integrity of the package are written to a per-user lock file; later starts install exactly
 * that version, and a different resolution (a new version behind the tag, a changed tarball) is
 * refused until the user accepts it with `mcp-sandbox update <pkg>`. Only the top-level package
 * is pinned; its dependencies resolve as npm resolves them.
 *
 * A pin binds a package identity, name@version, to one integrity, whichever registry serves
 * it: another registry (a changed `registry` setting, a project `.npmrc`) serving the same
 * name@version as another tarball is refused, and the install itself is compared with the pin
 * before the server starts (see the install step).
 */

/** The exact spec to install, and the integrity the install must have (absent: not pinned). */
export interface PinnedSpec {
  readonly spec: string;
  readonly integrity?: string;
}

/** A pinned package resolves differently now: refused until `mcp-sandbox update`. */
export class PinChangedError extends SandboxError {
  constructor(message: string) {
    super('E_PIN_CHANGED', message);
  }
}

/** The registry could not be asked, or answered something that is not a valid packument. */
export class RegistryError extends SandboxError {
  /** No answer at all (offline), as opposed to an answer that is not a valid packument. */
  readonly unreachable: boolean;

  constructor(message: string, options?: { cause?: unknown; unreachable?: boolean }) {
    super('E_REGISTRY', message, options);
    this.unreachable = options?.unreachable ?? false;
  }
}

/** `$MCP_SANDBOX_PIN_LOCK`, else `$XDG_STATE_HOME/mcp-sandbox/npx-lock.json`, else `~/.local/state/…`. */
export function defaultPinLockFile(env: Readonly<Record<string, string | undefined>>, home: string): string {
  if (env.MCP_SANDBOX_PIN_LOCK) return env.MCP_SANDBOX_PIN_LOCK;
  const state = env.XDG_STATE_HOME || join(home, '.local', 'state');
  return join(state, 'mcp-sandbox', 'npx-lock.json');
}

const NAME = PIN_NAME;
const VERSION = PIN_VERSION;
const TAG = /^[A-Za-z][A-Za-z0-9._-]{0,63}$/;
const INTEGRITY = PIN_INTEGRITY;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})$/;

export type NpmSelector = { readonly kind: 'tag' | 'version'; readonly value: string };

/**
 * A registry spec (`name`, `name@tag`, `name@1.2.3`), or undefined for what is not a registry
 * package (a path, a URL, git): those are the user's own or named by address, and not pinned.
 * A range (`name@^1`) cannot be pinned to one tarball: a UsageError says what to write instead.
 */
export function parseRegistrySpec(spec: string): { name: string; selector: NpmSelector } | undefined {
  if (/^[./~]|^[a-z+]+:|^[^@][^/]*\/[^/]/i.test(spec)) return undefined; // path, URL, git, user/repo
  const at = spec.indexOf('@', 1);
  const name = at === -1 ? spec : spec.slice(0, at);
  const wanted = at === -1 ? 'latest' : spec.slice(at + 1);
  if (!NAME.test(name)) return undefined;
  if (VERSION.test(wanted)) return { name, selector: { kind: 'version', value: wanted } };
  if (TAG.test(wanted)) return { name, selector: { kind: 'tag', value: wanted } };
  throw new UsageError(
    `npx -y ${spec}: a version range cannot be pinned; give an exact version (${name}@1.2.3) or a tag (${name}@latest)`,
  );
}

export interface Resolution {
  readonly version: string;
  readonly integrity: string;
  /** When that version was published, if the registry says (ISO 8601). */
  readonly published?: string;
}

const MAX_PACKUMENT_BYTES = 64 * 2 ** 20;

/**
 * Asks the registry what `name@selector` is now. The answer is parsed in full and every value
 * taken from it checked against a strict pattern before use: nothing the registry sends reaches
 * a terminal or a path unchecked.
 */
export async function resolveFromRegistry(
  registry: string,
  name: string,
  selector: NpmSelector,
  options: {
    full?: boolean;
    /**
     * For an exact version: ask its own document (`<name>/<version>`, a few KB) rather than the
     * packument of every version (MBs for some). Gives no `published`.
     */
    versionDocument?: boolean;
    timeoutMs?: number;
    trust?: RegistryTrust;
    agent?: RegistryAgent;
  } = {},
): Promise<Resolution> {
  if (options.versionDocument && selector.kind === 'version') {
    return fromVersionDocument(registry, name, selector.value, options);
  }
  const body = await askRegistry(
    registry,
    name,
    name.replace('/', '%2f'),
    options.full ? 'application/json' : 'application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8',
    options,
  );
  const doc = body as {
    'dist-tags'?: Record<string, unknown>;
    versions?: Record<string, { dist?: { integrity?: unknown } }>;
    time?: Record<string, unknown>;
  };
  const version = selector.kind === 'version' ? selector.value : doc?.['dist-tags']?.[selector.value];
  if (typeof version !== 'string' || !VERSION.test(version)) {
    throw new RegistryError(`${registry} has no valid version of ${name} for ${selector.value}`);
  }
  const integrity = doc.versions?.[version]?.dist?.integrity;
  if (typeof integrity !== 'string' || !INTEGRITY.test(integrity)) {
    throw new RegistryError(`${registry} gives no valid integrity for ${name}@${version}`);
  }
  const published = doc.time?.[version];
  return {
    version,
    integrity,
    ...(typeof published === 'string' && ISO_DATE.test(published) ? { published } : {}),
  };
}

/** One GET of `path` below the registry, parsed as JSON; a RegistryError says which failed. */
async function askRegistry(
  registry: string,
  name: string,
  path: string,
  accept: string,
  options: { timeoutMs?: number; trust?: RegistryTrust; agent?: RegistryAgent },
): Promise<unknown> {
  const url = new URL(path, registry.endsWith('/') ? registry : `${registry}/`);
  try {
    const text = await getText(
      url,
      accept,
      options.timeoutMs ?? 30_000,
      options.agent ?? options.trust ?? {},
    );
    return JSON.parse(text);
  } catch (error) {
    const unreachable = !(error instanceof SyntaxError) && !/^HTTP |too large/.test((error as Error).message);
    throw new RegistryError(`cannot ask ${registry} about ${name}: ${(error as Error).message}`, {
      cause: error,
      unreachable,
    });
  }
}

/**
 * `name@version` from its own document. The document must name that very package and version:
 * a registry that answers the path with another document (a proxy's catch-all) vouches for nothing.
 */
async function fromVersionDocument(
  registry: string,
  name: string,
  version: string,
  options: { timeoutMs?: number; trust?: RegistryTrust; agent?: RegistryAgent },
): Promise<Resolution> {
  if (!NAME.test(name) || !VERSION.test(version)) {
    throw new RegistryError(`not a registry package: ${JSON.stringify(`${name}@${version}`.slice(0, 80))}`);
  }
  const path = `${name.replace('/', '%2f')}/${encodeURIComponent(version)}`;
  const doc = (await askRegistry(registry, name, path, 'application/json', options)) as {
    name?: unknown;
    version?: unknown;
    dist?: { integrity?: unknown };
  } | null;
  if (doc?.name !== name || doc.version !== version) {
    throw new RegistryError(`${registry} answered ${name}/${version} with another document`);
  }
  const integrity = doc.dist?.integrity;
  if (typeof integrity !== 'string' || !INTEGRITY.test(integrity)) {
    throw new RegistryError(`${registry} gives no valid integrity for ${name}@${version}`);
  }
  return { version, integrity };
}

/**
 * One GET, no redirects, bounded in size and time; the CA files npm trusts are trusted here too
 * (or the agent's trust, built once for many questions). The HTTP and TLS modules load here, not
 * at start: most sessions never pin anything.
 */
async function getText(
  url: URL,
  accept: string,
  timeoutMs: number,
  via: RegistryTrust | RegistryAgent,
): Promise<string> {
  const { get } = url.protocol === 'http:' ? await import('node:http') : await import('node:https');
  let connection: Record<string, unknown>;
  if ('agent' in via) {
    if (via.protocol !== url.protocol) throw new Error(`an ${via.protocol} agent cannot ask ${url.protocol}`);
    connection = { agent: via.agent };
  } else if (url.protocol === 'https:') {
    const ca = await registryTlsCa(via);
    connection = { ...(ca ? { ca } : {}), rejectUnauthorized: via.strictSsl !== false };
  } else {
    connection = {};
  }
  return new Promise((resolve, reject) => {
    const request = get(url, { headers: { accept }, timeout: timeoutMs, ...connection }, (response) => {
      if (response.statusCode !== 200) {
        response.resume();
        reject(new Error(`HTTP ${response.statusCode}`));
        return;
      }
      // Merged as it arrives: a registry sending a byte per packet costs its bytes, not an object each.
      const body = new PendingBytes();
      response.on('data', (chunk: Buffer) => {
        if (body.length + chunk.length > MAX_PACKUMENT_BYTES) {
          request.destroy(new Error('the answer is too large'));
          return;
        }
        body.append(chunk);
      });
      response.on('end', () => resolve(body.takeAll().toString('utf8')));
      response.on('error', reject);
    });
    request.on('timeout', () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    request.on('error', reject);
  });
}

/** The pins recorded for `spec`: each must agree with what it resolves to now. */
const forSpec = (pins: readonly NpxPin[], spec: string) => pins.filter((pin) => pin.spec === spec);

/** The pins of one package identity, from whichever spec and registry. */
const forIdentity = (pins: readonly NpxPin[], name: string, version: string) =>
  pins.filter((pin) => pin.name === name && pin.version === version);

export interface PinOptions {
  readonly registry: string;
  readonly lockFile: string;
  readonly logger?: Logger;
  readonly trust?: RegistryTrust;
}

/**
 * The hook a backend calls before it installs `npx -y <spec>`: returns the exact spec to install
 * (`name@version`), pinning it on first use and refusing a changed resolution. Specs that are not
 * registry packages come back unchanged.
 */
export async function pinNpxSpec(spec: string, options: PinOptions): Promise<string> {
  return (await pinNpxPackage(spec, options)).spec;
}

/**
 * {@link pinNpxSpec} with the integrity the install must have: the install step compares what
 * npm installed with it before the server starts.
 */
export async function pinNpxPackage(spec: string, options: PinOptions): Promise<PinnedSpec> {
  const parsed = parseRegistrySpec(spec);
  if (!parsed) return { spec };
  const { registry, lockFile, logger, trust } = options;
  const pinned = forSpec(readPinLock(lockFile).pins, spec);
  let now: Resolution;
  try {
    now = await resolveFromRegistry(registry, parsed.name, parsed.selector, trust ? { trust } : {});
  } catch (error) {
    // Offline with a pin: its version is what would be installed anyway (or is cached). An
    // answer that is not a valid packument is no reason to skip the check: that fails closed.
    const first = pinned[0];
    if (first && error instanceof RegistryError && error.unreachable) {
      logger?.warn(`${error.message}; using the pinned ${first.name}@${first.version}`);
      return { spec: `${first.name}@${first.version}`, integrity: first.integrity };
    }
    throw error;
  }
  const check = (pins: readonly NpxPin[]) => checkAgainstPins(pins, spec, parsed.name, registry, now);
  check(readPinLock(lockFile).pins);
  if (pinned.length === 0) {
    let added = false;
    // Checked again under the lock's mutex: another start may have pinned it meanwhile.
    updatePinLock(lockFile, (pins) => {
      check(pins);
      if (forSpec(pins, spec).length > 0) return pins;
      added = true;
      const pin = {
        registry,
        spec,
        name: parsed.name,
        version: now.version,
        integrity: now.integrity,
        pinnedAt: new Date().toISOString(),
      };
      return [...pins, pin];
    });
    if (added) {
      logger?.info(
        `pinned ${parsed.name}@${now.version} (${short(now.integrity)}) in ${lockFile}; later starts install exactly this until mcp-sandbox update ${parsed.name}`,
      );
    }
  }
  return { spec: `${parsed.name}@${now.version}`, integrity: now.integrity };
}

/**
 * Refuses `now` when a pin of `spec` names another version, or a pin of the same name@version
 * (from any spec, any registry) another integrity.
 */
function checkAgainstPins(
  pins: readonly NpxPin[],
  spec: string,
  name: string,
  registry: string,
  now: Resolution,
): void {
  const update = `mcp-sandbox update ${name}`;
  for (const pin of forSpec(pins, spec)) {
    if (pin.version !== now.version) {
      throw new PinChangedError(
        `${spec} now resolves to ${name}@${now.version}${when(now.published)}, but ${pin.version} is pinned: ` +
          `refusing a version you have not accepted. Review it, then run ${update}`,
      );
    }
  }
  for (const pin of forIdentity(pins, name, now.version)) {
    if (pin.integrity === now.integrity) continue;
    const same = pin.registry === registry;
    const where = same
      ? `${registry} now serves`
      : `${registry} (not ${pin.registry}, where it was pinned) serves`;
    throw new PinChangedError(
      `${where} a different tarball for ${name}@${now.version}: ${now.integrity}, pinned ${pin.integrity}. ` +
        `Refusing it. If you trust the change, run ${update}${same ? '' : ` --registry ${registry}`}`,
    );
  }
}

export interface PinUpdate {
  readonly spec: string;
  readonly registry: string;
  /** `--registry`: the registry the pin is moved to. */
  readonly newRegistry?: string;
  readonly name: string;
  readonly from: { readonly version: string; readonly integrity: string; readonly published?: string };
  readonly to: Resolution;
}

/**
 * `mcp-sandbox update <pkg>`: resolves every pin of `name` again (with publish dates), re-pins
 * each to what the registry serves now, and returns what changed. `registry`: ask that one
 * instead of each pin's own (`--registry`, accepting another registry's tarball), and keep it.
 */
export async function updatePins(
  name: string,
  lockFile: string,
  trust: RegistryTrust = {},
  registry?: string,
): Promise<PinUpdate[]> {
  const pins = readPinLock(lockFile).pins.filter((pin) => pin.name === name);
  const updates: PinUpdate[] = [];
  for (const pin of pins) {
    const parsed = parseRegistrySpec(pin.spec);
    if (!parsed) continue;
    const from = registry ?? pin.registry;
    const to = await resolveFromRegistry(from, pin.name, parsed.selector, { full: true, trust });
    let fromPublished: string | undefined;
    if (pin.version !== to.version) {
      fromPublished = (
        await resolveFromRegistry(
          from,
          pin.name,
          { kind: 'version', value: pin.version },
          { full: true },
        ).catch(() => undefined)
      )?.published;
    } else {
      fromPublished = to.published;
    }
    updates.push({
      spec: pin.spec,
      registry: pin.registry,
      ...(registry ? { newRegistry: registry } : {}),
      name: pin.name,
      from: {
        version: pin.version,
        integrity: pin.integrity,
        ...(fromPublished ? { published: fromPublished } : {}),
      },
      to,
    });
  }
  updatePinLock(lockFile, (current) =>
    current.map((pin) => {
      const found = updates.find((u) => u.spec === pin.spec && u.registry === pin.registry);
      return found
        ? {
            ...pin,
            registry: found.newRegistry ?? pin.registry,
            version: found.to.version,
            integrity: found.to.integrity,
            pinnedAt: new Date().toISOString(),
          }
        : pin;
    }),
  );
  return updates;
}

function short(integrity: string): string {
  return `${integrity.slice(0, 19)}…`;
}

function when(published: string | undefined): string {
  return published ? ` (published ${published.slice(0, 10)})` : '';
}
