/**
 * The bridge's tool policy: the only case where it rewrites a message. Client requests that list
 * or call tools are checked on the way in; on the way out, a server line passes only if every
 * client reads it the way the bridge does, and a `tools/list` result shows the allowed tools only.
 */
import type { InFlightRequests } from './inflight.js';
import {
  BridgeErrorCode,
  inspectMessage,
  type MessageInfo,
  readStrict,
  type StrictReading,
} from './jsonrpc.js';
import type { Logger } from './logger.js';
import type { ToolReview } from './tool-review.js';
import type { ToolDescription } from './tool-surface.js';
import type { TraceSink } from './trace.js';

/** Dropped server lines noted on stderr; the rest only in the trace (a flood must not flood stderr). */
const DROP_NOTES = 10;

export interface ToolGateOptions {
  /** This session's review of the tools (`ToolPolicy.session()`): never shared by two sessions. */
  readonly review: ToolReview;
  readonly inflight: InFlightRequests;
  readonly logger: Logger;
  readonly trace: TraceSink | undefined;
}

/** A server line that passes, as the client gets it. */
export interface PassedLine {
  readonly line: Buffer;
  /** The line's text as read; the client gets other bytes when `filtered`. */
  readonly text: string;
  readonly filtered: boolean;
  /** A response's message (for the withheld-environment hints). */
  readonly response?: unknown;
}

/** Whether the line is not JSON-RPC, and was shown on stderr instead. */
export type Divert = (info: MessageInfo, content: Buffer, text: string) => boolean;

export class ToolGate {
  readonly #review: ToolReview;
  readonly #inflight: InFlightRequests;
  readonly #logger: Logger;
  readonly #trace: TraceSink | undefined;
  /**
   * Ids of `tools/list` requests whose responses are filtered, and whether each starts a listing
   * (no cursor) rather than asking for a later page.
   */
  readonly #toolLists = new Map<string, boolean>();
  /**
   * Ids of `server/discover` and `initialize` requests: their results describe the server, and a
   * `tools` array a hostile server adds to one is filtered like a list (2026-07-28 defines none).
   */
  readonly #descriptions = new Set<string>();
  #dropped = 0;

  constructor(options: ToolGateOptions) {
    this.#review = options.review;
    this.#inflight = options.inflight;
    this.#logger = options.logger;
    this.#trace = options.trace;
    if (this.#review.loadError) {
      this.#logger.warn(
        `the pin file could not be read (${this.#review.loadError}): every tool counts as changed`,
      );
      this.#trace?.event('pin-unreadable', { reason: this.#review.loadError });
    }
  }

  /** A client request: false when it is refused (answered here), and never reaches the server. */
  admit(info: MessageInfo): boolean {
    if (this.#watch(info) || info.method !== 'tools/call') return true;
    const params = (info.value as { params?: { name?: unknown } }).params;
    const tool = typeof params?.name === 'string' ? params.name : '';
    const verdict = this.#review.verdict(tool);
    if (verdict.allowed) return true;
    this.#logger.warn(`refused a call to tool ${JSON.stringify(tool)} (${verdict.rule})`);
    this.#trace?.event('policy', { action: 'refused', tool, rule: verdict.rule, id: info.idText });
    this.#inflight.answer(
      info.idKey as string,
      info.idText as string,
      BridgeErrorCode.policyDenied,
      `mcp-sandbox: tool ${JSON.stringify(tool)} is not allowed by this session's policy (${verdict.rule})`,
    );
    return false;
  }

  /**
   * A request whose answer lists tools: its id is noted so that the answer is filtered, whether
   * it came alone or in a batch. True when it is one.
   */
  #watch(info: MessageInfo): boolean {
    if (info.method === 'tools/list') {
      const cursor = (info.value as { params?: { cursor?: unknown } }).params?.cursor;
      this.#toolLists.set(info.idKey as string, cursor === undefined || cursor === null);
      return true;
    }
    if (info.method === 'server/discover' || info.method === 'initialize') {
      this.#descriptions.add(info.idKey as string);
      return true;
    }
    return false;
  }

  /**
   * A client batch: its requests are in flight like any others, and the answers of those that list
   * tools (`tools/list`, `initialize`, `server/discover`) are filtered as when they come alone. One
   * that calls a tool is refused whole, since refusing part of it would mean rewriting it.
   */
  admitBatch(batch: unknown[]): boolean {
    const requests = batch.map((m) => inspectMessage(JSON.stringify(m))).filter((m) => m.kind === 'request');
    for (const r of requests) this.#inflight.add(r.idKey as string, r.idText as string);
    if (!requests.some((r) => r.method === 'tools/call')) {
      for (const r of requests) this.#watch(r);
      return true;
    }
    this.#logger.warn('refused a batch that calls a tool: send tool calls one by one');
    this.#trace?.event('policy', { action: 'refused', reason: 'a batch that calls a tool' });
    for (const r of requests) {
      this.#inflight.answer(
        r.idKey as string,
        r.idText as string,
        BridgeErrorCode.policyDenied,
        "mcp-sandbox: a batch that calls a tool is not allowed by this session's policy; send tool calls one by one",
      );
    }
    return false;
  }

  /**
   * A server line, read in full. A response passes only for a request in flight with exactly its
   * id; anything else that may be a response is dropped, and the requests it might answer get an
   * error instead. `whole` is the line with its newline.
   */
  check(whole: Buffer, content: Buffer, divert: Divert): PassedLine | undefined {
    const reading = readStrict(content);
    const { text, info } = reading;
    if (!info) return this.#drop(text, reading.ambiguity as string, reading);
    if (divert(info, content, text)) return undefined;
    if (info.kind !== 'response') return { line: whole, text, filtered: false };
    const idKey = info.idKey as string;
    // The same JSON value: `1.0` is request 1 to every client that parses numbers, and past 2^53
    // the key is the exact text, so a lossy match is not exact.
    if (!this.#inflight.has(idKey)) {
      const matched = this.#inflight.looseMatches(reading.idTexts);
      const reason =
        matched.length > 0
          ? `its id ${reading.idRaw} only matches request ${matched.map(([, t]) => t).join(', ')} under a lenient reading`
          : 'a response to a request never sent';
      return this.#drop(text, reason, reading);
    }
    let line = whole;
    const listing = this.#toolLists.get(idKey);
    if (listing !== undefined) {
      const filtered = this.#filterTools(info, whole, { first: listing });
      if (!filtered) {
        const pending: [string, string] = [idKey, info.idText as string];
        return this.#drop(text, 'a tools/list result without a tools array', reading, [pending]);
      }
      this.#toolLists.delete(idKey);
      line = filtered;
    } else if (this.#descriptions.delete(idKey)) {
      line = this.#filterTools(info, whole, 'description') ?? whole;
    }
    this.#inflight.settle(idKey);
    return { line, text, filtered: line !== whole, response: info.value };
  }

  /**
   * Fails closed: the line does not reach the client. Requests it may have been meant to answer
   * get a policy error, so the client does not wait for an answer that will not come.
   */
  #drop(
    text: string,
    reason: string,
    reading: StrictReading,
    answered: Array<[string, string]> = [],
  ): undefined {
    this.#dropped++;
    if (this.#dropped <= DROP_NOTES) {
      const more = this.#dropped === DROP_NOTES ? ' (further drops are recorded only in the trace)' : '';
      this.#logger.warn(
        `dropped a server message (${reason}): with a tool policy active, only messages every client reads the same way pass${more}`,
      );
    }
    this.#trace?.event('policy', { action: 'dropped', reason, bytes: Buffer.byteLength(text), raw: text });
    const owed = new Map<string, string>(answered);
    if (reading.mayAnswer)
      for (const [idKey, idText] of this.#inflight.looseMatches(reading.idTexts)) owed.set(idKey, idText);
    for (const [idKey, idText] of owed) {
      this.#toolLists.delete(idKey);
      this.#descriptions.delete(idKey);
      this.#inflight.answer(
        idKey,
        idText,
        BridgeErrorCode.policyDenied,
        `mcp-sandbox: the server's answer was refused by this session's policy: ${reason}`,
      );
    }
    return undefined;
  }

  /**
   * Filters a `tools/list` result (`listing` says whether its request started a listing): this one
   * response is re-serialized, every other byte stays verbatim. Undefined for a result a client
   * could read tools from that this cannot check. A `description` (a discover or initialize
   * result) need not list tools, and what it lists is hidden by the rules but never pinned: only
   * `tools/list` says what the tools are. In both, every entry of an ambiguous name is dropped.
   */
  #filterTools(
    info: MessageInfo,
    line: Buffer,
    listing: { first: boolean } | 'description',
  ): Buffer | undefined {
    const message = info.value as { result?: unknown };
    if (!Object.hasOwn(message, 'result')) return line;
    const result = message.result as { tools?: unknown; nextCursor?: unknown } | null;
    if (typeof result !== 'object' || result === null || !Array.isArray(result.tools))
      return listing === 'description' ? line : undefined;
    const tools = (result.tools as unknown[]).filter(
      (t): t is ToolDescription =>
        typeof t === 'object' && t !== null && typeof (t as ToolDescription).name === 'string',
    );
    const last = result.nextCursor === undefined || result.nextCursor === null;
    const ambiguous = new Set(
      listing === 'description'
        ? this.#reviewDescription(tools)
        : this.#reviewPage(tools, listing.first, last),
    );
    const kept = tools.filter((tool) => {
      if (ambiguous.has(tool.name)) return false;
      const verdict = this.#review.verdict(tool.name);
      if (!verdict.allowed)
        this.#trace?.event('policy', { action: 'hidden', tool: tool.name, rule: verdict.rule });
      return verdict.allowed;
    });
    if (kept.length === result.tools.length) return line;
    const body = JSON.stringify({ ...result, tools: kept });
    return Buffer.from(`{"jsonrpc":"2.0","id":${info.idText},"result":${body}}\n`);
  }

  /** Reviews one page against the pins and says what it found; returns the ambiguous names. */
  #reviewPage(tools: readonly ToolDescription[], first: boolean, last: boolean): readonly string[] {
    const { ambiguous, changes, saveError } = this.#review.review({ tools, first, last });
    for (const { tool, change } of changes) {
      this.#logger.warn(`tool ${JSON.stringify(tool)} was ${change} since the tools were pinned`);
      this.#trace?.event('pin-drift', { tool, change });
    }
    this.#noteAmbiguous(ambiguous);
    if (saveError) {
      this.#logger.warn(`could not write the pin file (${saveError}): the pins hold for this session only`);
      this.#trace?.event('pin-save-failed', { reason: saveError });
    }
    return ambiguous;
  }

  #reviewDescription(tools: readonly ToolDescription[]): readonly string[] {
    const ambiguous = this.#review.reviewDescription(tools);
    this.#noteAmbiguous(ambiguous);
    return ambiguous;
  }

  /** Ambiguous names, on stderr (a bounded number of them) and each in the trace. */
  #noteAmbiguous(names: readonly string[]): void {
    for (const [index, tool] of names.entries()) {
      this.#trace?.event('policy', { action: 'ambiguous', tool, rule: 'listed more than once' });
      if (index < DROP_NOTES)
        this.#logger.warn(
          `tool ${JSON.stringify(tool)} is listed more than once in one listing (exactly or as a look-alike name): every entry of it is dropped, and calls to it are refused`,
        );
    }
    if (names.length > DROP_NOTES)
      this.#logger.warn(
        `${names.length - DROP_NOTES} more ambiguous tool names are recorded only in the trace`,
      );
  }
}
