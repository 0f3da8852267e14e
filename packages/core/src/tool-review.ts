/**
 * One session's review of the tools a server lists. A tool's identity is the whole list, not a
 * map: every entry of every page is reviewed, a name listed twice in one listing (or as a
 * look-alike, see tool-names.ts) is ambiguous and refused, and a first run pins the first digest
 * of each name and ends with the first complete listing; anything after that is drift.
 */

import { ambiguousNames } from './tool-names.js';
import {
  digestTool,
  type PinChange,
  type PinStore,
  type ToolDescription,
  type ToolVerdict,
} from './tool-surface.js';

export interface ToolReviewOptions {
  /** The allow and deny rules. */
  readonly rules: (tool: string) => ToolVerdict;
  readonly pins?: PinStore;
  readonly strict: boolean;
}

/** One page of a `tools/list` result. */
export interface ListingPage {
  /** Its entries that have a string name, in order, duplicates included. */
  readonly tools: readonly ToolDescription[];
  /** The request carried no cursor: a new listing starts with this page. */
  readonly first: boolean;
  /** The result carried no `nextCursor`: the listing ends with this page. */
  readonly last: boolean;
}

export interface PageReview {
  /** Names that are ambiguous in this listing: every entry of theirs is dropped, calls refused. */
  readonly ambiguous: readonly string[];
  /** Tools that differ from the pins (reported; refused when strict). */
  readonly changes: readonly PinChange[];
  /** Why the first complete listing could not be written as the pins, if it could not. */
  readonly saveError?: string;
}

const AMBIGUOUS_RULE = 'listed more than once';

export class ToolReview {
  readonly #rules: (tool: string) => ToolVerdict;
  readonly #pins: PinStore | undefined;
  readonly #strict: boolean;
  /** The pins compared with: the file's, or on a first run what this session recorded so far. */
  #pinned: Map<string, string>;
  /** A first run that has not seen a complete listing yet. */
  #recording: boolean;
  /** Why the pin file could not be read when the session started, if it could not. */
  readonly loadError: string | undefined;
  readonly #drifted = new Set<string>();
  readonly #ambiguous = new Set<string>();
  /** The listing in progress: the names of its pages so far, by skeleton. */
  #listing: { readonly seen: Map<string, Set<string>>; readonly fromStart: boolean } | undefined;

  constructor(options: ToolReviewOptions) {
    this.#rules = options.rules;
    this.#pins = options.pins;
    this.#strict = options.strict;
    let loaded: Record<string, string> | undefined;
    try {
      loaded = this.#pins?.load();
    } catch (error) {
      // Fails closed: nothing counts as pinned, so every tool is drift (and refused when strict).
      this.loadError = (error as Error).message;
      loaded = {};
    }
    this.#pinned = new Map(Object.entries(loaded ?? {}));
    this.#recording = this.#pins !== undefined && loaded === undefined;
  }

  verdict(tool: string): ToolVerdict {
    const rule = this.#rules(tool);
    if (!rule.allowed) return rule;
    if (this.#ambiguous.has(tool)) return { allowed: false, rule: AMBIGUOUS_RULE, reason: 'ambiguous' };
    // Strict pins are an allowlist: a tool never pinned is refused even when it was never listed,
    // since a 2026-07-28 client may call from a cached list without listing again.
    if (this.#strict && (this.#drifted.has(tool) || !this.#pinned.has(tool)))
      return { allowed: false, rule: 'pin-tools-strict', reason: 'pin' };
    return { allowed: true };
  }

  /** Reviews one page of a `tools/list` result, in the order the pages arrive. */
  review(page: ListingPage): PageReview {
    if (page.first || !this.#listing) this.#listing = { seen: new Map(), fromStart: page.first };
    const listing = this.#listing;
    const ambiguous = this.#markAmbiguous(page.tools, listing.seen);
    const changes: PinChange[] = [];
    let saveError: string | undefined;
    if (this.#pins) {
      for (const tool of page.tools) {
        if (ambiguous.has(tool.name)) continue;
        const change = this.#compare(tool.name, digestTool(tool));
        if (change) changes.push(change);
      }
      if (page.last && listing.fromStart && this.#recording) {
        const ended = this.#endRecording(this.#pins);
        changes.push(...ended.changes);
        saveError = ended.saveError;
      }
    }
    if (page.last) this.#listing = undefined;
    return { ambiguous: [...ambiguous], changes, ...(saveError ? { saveError } : {}) };
  }

  /**
   * A list of tools in a result that is not a listing (a hostile `initialize` or `server/discover`
   * result): never pinned, but its ambiguous names are refused like a listing's.
   */
  reviewDescription(tools: readonly ToolDescription[]): readonly string[] {
    return [...this.#markAmbiguous(tools, new Map())];
  }

  #markAmbiguous(tools: readonly ToolDescription[], seen: Map<string, Set<string>>): Set<string> {
    const ambiguous = ambiguousNames(
      tools.map((t) => t.name),
      seen,
    );
    for (const name of ambiguous) {
      this.#ambiguous.add(name);
      // A name with two faces is not pinned as either.
      if (this.#recording) this.#pinned.delete(name);
    }
    return ambiguous;
  }

  #compare(name: string, digest: string): PinChange | undefined {
    const pinned = this.#pinned.get(name);
    if (pinned === digest) return undefined;
    if (pinned === undefined && this.#recording && !this.#ambiguous.has(name)) {
      this.#pinned.set(name, digest);
      return undefined;
    }
    if (this.#drifted.has(name)) return undefined;
    this.#drifted.add(name);
    return { tool: name, change: pinned === undefined ? 'added' : 'changed' };
  }

  /**
   * The first complete listing: its first digests become the pins, unless another session (a
   * second client of `serve`, another process) pinned first; then its pins are the ones, and what
   * this session recorded is compared with them.
   */
  #endRecording(store: PinStore): { changes: PinChange[]; saveError?: string } {
    this.#recording = false;
    const recorded = this.#pinned;
    try {
      if (store.create(Object.fromEntries(recorded))) return { changes: [] };
      this.#pinned = new Map(Object.entries(store.load() ?? {}));
    } catch (error) {
      // Not written, or not readable: this session keeps what it recorded, and says so.
      return { changes: [], saveError: (error as Error).message };
    }
    const changes: PinChange[] = [];
    for (const [name, digest] of recorded) {
      const change = this.#compare(name, digest);
      if (change) changes.push(change);
    }
    return { changes };
  }
}
