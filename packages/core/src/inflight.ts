/** The client's requests the server has not answered yet, and the answers the bridge gives instead. */
import { type Deferred, deferred } from './deferred.js';
import { errorResponseLine, idsLooselyEqual } from './jsonrpc.js';
import type { TraceSink } from './trace.js';

/** How many cancelled requests are remembered, so that a late answer to one still passes. */
const MAX_CANCELLED = 256;

export class InFlightRequests {
  /** id key → id text, as the client wrote it. */
  readonly #pending = new Map<string, string>();
  /** The newest requests the client cancelled: owed nothing, never waited for, and bounded. */
  readonly #cancelled = new Map<string, string>();
  readonly #sendToClient: (line: Buffer) => void;
  readonly #trace: TraceSink | undefined;
  #drained: Deferred<void> | undefined;

  constructor(sendToClient: (line: Buffer) => void, trace: TraceSink | undefined) {
    this.#sendToClient = sendToClient;
    this.#trace = trace;
  }

  get size(): number {
    return this.#pending.size;
  }

  add(idKey: string, idText: string): void {
    this.#pending.set(idKey, idText);
  }

  has(idKey: string): boolean {
    return this.#pending.has(idKey) || this.#cancelled.has(idKey);
  }

  /**
   * The client cancelled a request (`notifications/cancelled`): it is owed no answer, so it is no
   * longer waited for or answered for; only the newest few are remembered, for a late answer.
   */
  cancel(value: unknown): void {
    const idKey = cancelledKey(value);
    const idText = idKey === undefined ? undefined : this.#pending.get(idKey);
    if (idKey === undefined || idText === undefined) return;
    this.settle(idKey);
    this.#cancelled.set(idKey, idText);
    if (this.#cancelled.size > MAX_CANCELLED) {
      this.#cancelled.delete(this.#cancelled.keys().next().value as string);
    }
  }

  /** Every request in flight, as [id key, id text]: a copy, so answering them is safe. */
  entries(): Array<[string, string]> {
    return [...this.#pending];
  }

  /** Requests in flight that a lenient reader could take any of `idTexts` for. */
  looseMatches(idTexts: readonly string[]): Array<[string, string]> {
    return this.entries().filter(([, pending]) => idTexts.some((id) => idsLooselyEqual(id, pending)));
  }

  /** The request was answered. */
  settle(idKey: string): void {
    this.#pending.delete(idKey);
    this.#cancelled.delete(idKey);
    if (this.#pending.size === 0) this.#drained?.resolve();
  }

  /** Answers the request with an error of the bridge's own, in place of the server. */
  answer(idKey: string, idText: string, code: number, message: string): void {
    this.settle(idKey);
    this.#trace?.event('synthesized-error', { id: idText, code, message });
    this.#sendToClient(errorResponseLine(idText, code, message));
  }

  /** Settles once no request is in flight (at once when none is). */
  drained(): Promise<void> {
    if (this.#pending.size === 0) return Promise.resolve();
    this.#drained = deferred();
    return this.#drained.promise;
  }
}

/** The key of the request a `notifications/cancelled` names (an exact id only: a string or a safe integer). */
function cancelledKey(value: unknown): string | undefined {
  const message = value as { method?: unknown; params?: { requestId?: unknown } } | null;
  if (message?.method !== 'notifications/cancelled') return undefined;
  const id = message.params?.requestId;
  if (typeof id === 'string') return `s:${id}`;
  return Number.isSafeInteger(id) ? `n:${String(id)}` : undefined;
}
