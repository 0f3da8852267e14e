import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { UsageError } from './errors.js';

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

export type ToolVerdict =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly rule: string; readonly reason: 'allow' | 'deny' | 'pin' };

export interface ToolDescription {
  readonly name: string;
  readonly description?: unknown;
  readonly inputSchema?: unknown;
}

export interface PinChange {
  readonly tool: string;
  readonly change: 'added' | 'changed';
}

export interface PinStore {
  load(): Record<string, string> | undefined;
  save(pins: Record<string, string>): void;
  readonly location: string;
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
  #pinned: Record<string, string> | undefined;
  #firstRun: boolean;
  /** Tools whose surface differs from the pin; refused in strict mode. */
  readonly #drifted = new Set<string>();

  constructor(options: ToolPolicyOptions) {
    this.#allow = (options.allow ?? []).map((g) => [g, globToRegExp(g)]);
    this.#deny = (options.deny ?? []).map((g) => [g, globToRegExp(g)]);
    this.#pins = options.pins;
    this.#strict = options.strict ?? false;
    this.#pinned = this.#pins?.load();
    this.#firstRun = this.#pins !== undefined && this.#pinned === undefined;
  }

  /** Whether the policy has anything to do; the bridge skips all work when it has not. */
  get active(): boolean {
    return this.#allow.length > 0 || this.#deny.length > 0 || this.#pins !== undefined;
  }

  verdict(tool: string): ToolVerdict {
    for (const [glob, re] of this.#deny)
      if (re.test(tool)) return { allowed: false, rule: `deny ${glob}`, reason: 'deny' };
    if (this.#allow.length > 0 && !this.#allow.some(([, re]) => re.test(tool))) {
      return { allowed: false, rule: `allow ${this.#allow.map(([g]) => g).join(',')}`, reason: 'allow' };
    }
    // Strict pins are an allowlist: a tool never pinned is refused even when it was never listed,
    // since a 2026-07-28 client may call from a cached list without listing again.
    if (this.#strict && (this.#drifted.has(tool) || !this.#pinned || !Object.hasOwn(this.#pinned, tool)))
      return { allowed: false, rule: 'pin-tools-strict', reason: 'pin' };
    return { allowed: true };
  }

  /**
   * Checks one page of a `tools/list` result against the pins. On the first run the surface is
   * recorded; afterwards added or changed tools are reported (and, when strict, refused from then on).
   */
  review(tools: readonly ToolDescription[]): PinChange[] {
    if (!this.#pins) return [];
    const digests = Object.fromEntries(tools.map((t) => [t.name, digestTool(t)]));
    if (this.#firstRun) {
      this.#pinned = { ...this.#pinned, ...digests };
      this.#pins.save(this.#pinned);
      return [];
    }
    const pinned = this.#pinned ?? {};
    const changes: PinChange[] = [];
    for (const [name, digest] of Object.entries(digests)) {
      if (!(name in pinned)) changes.push({ tool: name, change: 'added' });
      else if (pinned[name] !== digest) changes.push({ tool: name, change: 'changed' });
      if (pinned[name] !== digest) this.#drifted.add(name);
    }
    return changes;
  }
}

/** sha256 over the parts of a tool a client shows to a model: name, description, input schema. */
export function digestTool(tool: ToolDescription): string {
  const canonical = canonicalJson({
    name: tool.name,
    description: tool.description ?? null,
    inputSchema: tool.inputSchema ?? null,
  });
  return createHash('sha256').update(canonical).digest('hex');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.keys(value as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** A pin file: `{"v":1,"tools":{"name":"sha256"}}`, written atomically. */
export function filePinStore(path: string): PinStore {
  return {
    location: path,
    load() {
      if (!existsSync(path)) return undefined;
      try {
        const parsed = JSON.parse(readFileSync(path, 'utf8')) as {
          v?: number;
          tools?: Record<string, string>;
        };
        if (parsed.v !== 1 || typeof parsed.tools !== 'object' || parsed.tools === null)
          throw new Error('not a v1 pin file');
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
    save(pins) {
      const temp = `${path}.${process.pid}.tmp`;
      writeFileSync(temp, `${JSON.stringify({ v: 1, tools: pins }, null, 2)}\n`);
      renameSync(temp, path);
    },
  };
}
