/** The client's requests the server has not answered yet, and the answers the bridge gives instead. */
import { type Deferred, deferred } from './deferred.js';
import { errorResponseLine, idsLooselyEqual } from './jsonrpc.js';
import type { TraceSink } from './trace.js';

export class InFlightRequests {
  /** id key → id text, as the client wrote it. */
  readonly #pending = new Map<string, string>();
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
    return this.#pending.has(idKey);
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
