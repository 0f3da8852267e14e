import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  linkSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { UsageError } from './errors.js';
import { toolNameSkeleton } from './tool-names.js';
import { ToolReview } from './tool-review.js';
import type { PinStore, ToolVerdict } from './tool-surface.js';

export type { PinChange, PinStore, ToolDescription, ToolVerdict } from './tool-surface.js';
export { digestTool } from './tool-surface.js';

/**
 * Which tools the client may see and call. The same rule filters `tools/list` results and refuses
 * `tools/call`, so a hidden tool cannot be called by a client that guesses its name.
 */
export interface ToolPolicyOptions {
  /** Globs (`*`, `?`); when any is given, only matching tools pass. */
  readonly allow?: readonly string[];
  /** Globs; a matching tool never passes, whatever `allow` says. */
  readonly deny?: readonly string[];
  /** Pinned tool surface: warns (or with `strict`, refuses) when a tool changes after it was pinned. */
  readonly pins?: PinStore;
  readonly strict?: boolean;
}

export function globToRegExp(glob: string): RegExp {
  const body = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`);
}

export class ToolPolicy {
  readonly #allow: Array<[string, RegExp]>;
  readonly #deny: Array<[string, RegExp]>;
  readonly #pins: PinStore | undefined;
  readonly #strict: boolean;

  constructor(options: ToolPolicyOptions) {
    this.#allow = (options.allow ?? []).map((g) => [g, globToRegExp(g)]);
    this.#deny = (options.deny ?? []).map((g) => [g, globToRegExp(g)]);
    this.#pins = options.pins;
    this.#strict = options.strict ?? false;
    // An unreadable pin file is the user's mistake: said at the start, not at the first listing.
    this.#pins?.load();
  }

  /** Whether the policy has anything to do; the bridge skips all work when it has not. */
  get active(): boolean {
    return this.#allow.length > 0 || this.#deny.length > 0 || this.#pins !== undefined;
  }

  /**
   * The allow and deny rules alone. A deny rule also matches a look-alike of the name it matches
   * (`ｇｅｔ-env`, `gеt-env` with a Cyrillic е). Pins and ambiguity are a session's: see `session`.
   */
  verdict(tool: string): ToolVerdict {
    const skeleton = toolNameSkeleton(tool);
    for (const [glob, re] of this.#deny)
      if (re.test(tool) || re.test(skeleton)) return { allowed: false, rule: `deny ${glob}`, reason: 'deny' };
    if (this.#allow.length > 0 && !this.#allow.some(([, re]) => re.test(tool))) {
      return { allowed: false, rule: `allow ${this.#allow.map(([g]) => g).join(',')}`, reason: 'allow' };
    }
    return { allowed: true };
  }

  /**
   * A review of one session's listings: what it learns (pins recorded on a first run, drift,
   * ambiguous names) is its own. Under `serve` every session gets one, so no session changes what
   * another trusts; the pin file is the only thing they share, and it is written once.
   */
  session(): ToolReview {
    return new ToolReview({
      rules: (tool) => this.verdict(tool),
      ...(this.#pins ? { pins: this.#pins } : {}),
      strict: this.#strict,
    });
  }
}

/**
 * A pin file: `{"v":1,"tools":{"name":"sha256"}}`, written once: a complete temporary file is
 * linked to the name, which fails when the name exists (a link never replaces, nor follows, what
 * is there), so the file is never half-written and never rewritten.
 */
export function filePinStore(path: string): PinStore {
  return {
    location: path,
    load() {
      try {
        const text = readPinFile(path);
        if (text === undefined) return undefined;
        const parsed = JSON.parse(text) as {
          v?: number;
          tools?: Record<string, string>;
        };
        if (parsed.v !== 1 || typeof parsed.tools !== 'object' || parsed.tools === null)
          throw new Error('not a v1 pin file');
        for (const digest of Object.values(parsed.tools))
          if (typeof digest !== 'string' || !/^[0-9a-f]{64}$/.test(digest))
            throw new Error('a pin that is not a sha256 digest');
        return { ...parsed.tools };
      } catch (error) {
        throw new UsageError(
          `--pin-tools ${path}: unreadable pin file (${(error as Error).message}); delete it to re-pin`,
          {
            cause: error,
          },
        );
      }
    },
    create(pins) {
      const text = `${JSON.stringify({ v: 1, tools: pins }, null, 2)}\n`;
      const temp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
      writeFileSync(temp, text, { flag: 'wx' });
      try {
        linkSync(temp, path);
        return true;
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'EEXIST') return false;
        if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw error;
        // A file system without hard links: an exclusive create, not atomic but never a replace.
        return createExclusive(path, text);
      } finally {
        rmSync(temp, { force: true });
      }
    },
  };
}

function createExclusive(path: string, text: string): boolean {
  try {
    writeFileSync(path, text, { flag: 'wx' });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

/** A pin file is a few digests a tool: anything near this size is not one. */
const MAX_PIN_FILE_BYTES = 16 * 1024 * 1024;

/**
 * The pin file's text, or undefined when there is none. Opened without blocking and checked to be
 * a regular file of a sane size first: a FIFO or a device at the path must not hang every session.
 */
function readPinFile(path: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new Error('not a regular file');
    if (stat.size > MAX_PIN_FILE_BYTES) throw new Error(`larger than ${MAX_PIN_FILE_BYTES} bytes`);
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}
