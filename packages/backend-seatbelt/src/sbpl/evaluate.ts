import { SbplSyntaxError } from '../errors.js';
import { isList, readProfile, type Sexp, stringOf, symbolOf } from './read.js';

/**
 * One question to a profile: may a process of this sandbox do `op` on this object?
 * `path` is the resolved path the kernel checks (Seatbelt sees paths after symlinks:
 * `/private/var/…`, never `/var/…`).
 */
export interface Query {
  readonly op: string;
  readonly path?: string;
  /** For `hard-link` (link(2), see {@link decideHardLink}): the name to create; `path` is the existing file. */
  readonly newPath?: string;
  /** A Mach service, sysctl or POSIX IPC name, for `mach-lookup`, `sysctl-*`, `ipc-posix-*`. */
  readonly name?: string;
  /** `host:port` of a network operation (`localhost:41999`, `*:443`). */
  readonly remote?: string;
  readonly local?: string;
  /** The vnode type of `path` (default REGULAR-FILE). */
  readonly vnodeType?: string;
  /** For `signal`/`process-info*`: is the target in this sandbox. */
  readonly sameSandbox?: boolean;
}

export type Action = 'allow' | 'deny';

/** One top-level rule, kept as read: the operations it names and its filters (any one matches). */
export interface Rule {
  readonly action: Action;
  readonly ops: readonly string[];
  readonly filters: readonly Sexp[];
  readonly index: number;
}

export interface Decision {
  readonly action: Action;
  /** The rule that decided, or undefined when the default did. */
  readonly rule?: Rule;
}

export interface Profile {
  readonly defaultAction: Action;
  readonly rules: readonly Rule[];
}

/**
 * The profile's rules. Apple's SBPL: `(version 1)`, `(allow|deny default)` as the fallback,
 * then `(allow|deny op… filter…)`; a rule with several filters matches when any one does;
 * `(with …)` modifiers change logging, not the decision.
 */
export function parseProfile(text: string): Profile {
  let defaultAction: Action | undefined;
  const rules: Rule[] = [];
  for (const form of readProfile(text)) {
    if (!isList(form)) throw new SbplSyntaxError('a top-level form that is not a list');
    const head = symbolOf(form[0]);
    if (head === 'version') continue;
    if (head !== 'allow' && head !== 'deny')
      throw new SbplSyntaxError(`unsupported top-level form "${head ?? '?'}"`);
    const ops: string[] = [];
    const filters: Sexp[] = [];
    for (const item of form.slice(1)) {
      const op = symbolOf(item);
      if (op !== undefined) ops.push(op);
      else if (isList(item) && symbolOf(item[0]) === 'with') continue;
      else if (isList(item)) filters.push(item);
      else throw new SbplSyntaxError('a string where an operation or filter belongs');
    }
    if (ops.length === 0) throw new SbplSyntaxError(`a rule with no operation`);
    if (ops.includes('default')) {
      if (ops.length > 1 || filters.length > 0)
        throw new SbplSyntaxError('"default" with other operations or filters');
      defaultAction = head;
      continue;
    }
    rules.push({ action: head, ops, filters, index: rules.length });
  }
  if (defaultAction === undefined) throw new SbplSyntaxError('no (allow|deny default) rule');
  return { defaultAction, rules };
}

/** Older names Apple's profiles still use for a whole group (`(allow ipc-posix-shm)`). */
const LEGACY_GROUPS: Readonly<Record<string, string>> = {
  'ipc-posix-shm': 'ipc-posix-shm*',
  'ipc-posix-sem': 'ipc-posix-sem*',
};

/**
 * Does a rule's operation cover the asked one? Operations form a tree by name: `file*` covers
 * `file-read*` covers `file-read-data`; a rule naming a group applies to every operation in it.
 */
export function opCovers(written: string, asked: string): boolean {
  const ruleOp = LEGACY_GROUPS[written] ?? written;
  if (ruleOp === asked) return true;
  if (!ruleOp.endsWith('*')) return false;
  return asked.startsWith(ruleOp.slice(0, -1));
}

/** The decision for one question: the last matching rule wins, else the default. */
export function decide(profile: Profile, query: Query): Decision {
  if (query.op === 'hard-link') return decideHardLink(profile, query);
  for (let i = profile.rules.length - 1; i >= 0; i--) {
    const rule = profile.rules[i] as Rule;
    if (!rule.ops.some((op) => opCovers(op, query.op))) continue;
    if (rule.filters.length === 0 || rule.filters.some((filter) => matches(filter, query))) {
      return { action: rule.action, rule };
    }
  }
  return { action: profile.defaultAction };
}

/**
 * `link(existing, newPath)`. The new name is a `file-write-create` of `newPath`. Which path the
 * `file-link` operation is matched against is not documented: Apple's own container profile
 * (iOS 9.1, after hard links into the AddressBook were reported) filters it by the existing
 * file's path, other Seatbelt users read it as the new name's. A link counts as refused only if
 * it is refused under both readings; otherwise the rule that would let it through is returned.
 */
function decideHardLink(profile: Profile, query: Query): Decision {
  if (query.path === undefined || query.newPath === undefined) {
    throw new SbplSyntaxError('a hard-link question needs path (the existing file) and newPath');
  }
  const create = decide(profile, { op: 'file-write-create', path: query.newPath });
  if (create.action === 'deny') return create;
  const onExisting = decide(profile, { op: 'file-link', path: query.path });
  const onNew = decide(profile, { op: 'file-link', path: query.newPath });
  return onExisting.action === 'allow' ? onExisting : onNew;
}

function arg(filter: readonly Sexp[], at: number, kind: string): string {
  const value = stringOf(filter[at]);
  if (value === undefined) throw new SbplSyntaxError(`(${kind} …) needs a string`);
  return value;
}

/** One filter against one question. A filter the question has no value for does not match. */
export function matches(filter: Sexp, query: Query): boolean {
  if (!isList(filter)) throw new SbplSyntaxError('a filter that is not a list');
  const kind = symbolOf(filter[0]) ?? '';
  switch (kind) {
    case 'require-any':
      return filter.slice(1).some((f) => matches(f, query));
    case 'require-all':
      return filter.slice(1).every((f) => matches(f, query));
    case 'require-not':
      return !matches(filter[1] as Sexp, query);
    case 'literal':
      return query.path === arg(filter, 1, kind);
    case 'subpath': {
      const root = arg(filter, 1, kind);
      return (
        query.path !== undefined &&
        (query.path === root || query.path.startsWith(root === '/' ? '/' : `${root}/`))
      );
    }
    case 'prefix':
      return query.path?.startsWith(arg(filter, 1, kind)) ?? false;
    case 'regex':
      return query.path !== undefined && new RegExp(arg(filter, 1, kind)).test(query.path);
    case 'vnode-type':
      return (query.vnodeType ?? 'REGULAR-FILE') === symbolOf(filter[1]);
    case 'global-name':
    case 'sysctl-name':
    case 'ipc-posix-name':
      return query.name === arg(filter, 1, kind);
    case 'global-name-prefix':
    case 'sysctl-name-prefix':
    case 'ipc-posix-name-prefix':
      return query.name?.startsWith(arg(filter, 1, kind)) ?? false;
    case 'remote':
    case 'local':
      return networkMatches(filter, kind === 'remote' ? query.remote : query.local);
    case 'target':
      return symbolOf(filter[1]) === 'same-sandbox' ? query.sameSandbox === true : false;
    default:
      // Fail closed: a filter the evaluator does not model cannot be claimed to match or not.
      throw new SbplSyntaxError(`the evaluator does not model the filter "${kind}"`);
  }
}

/** `(remote ip "localhost:41999")`, `(remote ip "*:*")`, `(remote unix-socket …)`. */
function networkMatches(filter: readonly Sexp[], asked: string | undefined): boolean {
  if (asked === undefined) return false;
  if (symbolOf(filter[1]) !== 'ip') return false;
  const want = arg(filter, 2, 'ip');
  const [wantHost, wantPort] = splitHostPort(want);
  const [host, port] = splitHostPort(asked);
  return (wantHost === '*' || wantHost === host) && (wantPort === '*' || wantPort === port);
}

function splitHostPort(value: string): [string, string] {
  const at = value.lastIndexOf(':');
  return at < 0 ? [value, '*'] : [value.slice(0, at), value.slice(at + 1)];
}
