/**
 * The parent's check of every event a sandbox sends. After an escape into the worker's realm
 * the worker is the attacker: it can send any line. The gate admits only the event types the
 * app's API may send, and enforces every budget itself, the same numbers the worker's runtime
 * enforces first (so an honest worker never trips it). A breach stops the sandbox.
 */
import type { Budgets } from './budgets.js';
import type { EngineEvent } from './runtime.js';

export type Api = 'app' | 'mcp' | 'raw';

/** `pass` it on, `drop` it quietly, or stop the sandbox (`breach`, with what was wrong). */
export type Verdict =
  | { readonly ok: true; readonly pass: boolean }
  | { readonly ok: false; readonly why: string };

const PASS: Verdict = { ok: true, pass: true };
const DROP: Verdict = { ok: true, pass: false };
const breach = (why: string): Verdict => ({ ok: false, why });

/** Event types per API, beyond those every sandbox sends. */
const ALLOWED: Record<Api, ReadonlySet<string>> = {
  app: new Set(['call']),
  mcp: new Set(['call', 'register', 'reply']),
  raw: new Set(['call', 'out', 'exit', 'signal-default']),
};
const COMMON = new Set(['log', 'log-limit', 'error', 'error-limit', 'ready', 'idle', 'crash']);

export class EventGate {
  readonly #api: Api;
  readonly #exposed: ReadonlySet<string>;
  readonly #budgets: Budgets;
  readonly #calls = new Map<number, number>();
  #callBytes = 0;
  readonly #outs = new Map<number, number>();
  #outBytes = 0;
  #logEvents = 0;
  #logBytes = 0;
  #errorEvents = 0;
  #errorBytes = 0;
  #registrations = 0;
  #registrationBytes = 0;
  #ready = false;
  readonly #notices = new Set<string>();

  constructor(api: Api, exposed: ReadonlySet<string>, budgets: Budgets) {
    this.#api = api;
    this.#exposed = exposed;
    this.#budgets = budgets;
  }

  admit(event: EngineEvent): Verdict {
    const b = this.#budgets;
    if (!COMMON.has(event.t) && !ALLOWED[this.#api].has(event.t))
      return breach(`'${event.t}' is not an event of the ${this.#api} API`);
    switch (event.t) {
      case 'log':
        this.#logEvents++;
        this.#logBytes += event.text.length;
        return this.#logEvents > b.maxLogEvents || this.#logBytes > b.maxLogBytes
          ? breach('over the log budget')
          : PASS;
      case 'error':
        this.#errorEvents++;
        this.#errorBytes += event.name.length + event.message.length;
        return this.#errorEvents > b.maxErrorEvents || this.#errorBytes > b.maxErrorBytes
          ? breach('over the error budget')
          : PASS;
      case 'call':
        if (!this.#exposed.has(event.name)) return breach('a call of a function that is not exposed');
        if (this.#calls.has(event.id) || this.#outs.has(event.id)) return breach('a call id in use');
        if (this.#calls.size >= b.maxCallsInFlight) return breach('too many calls in flight');
        if (this.#callBytes + event.args.length > b.maxCallBytesInFlight)
          return breach('too much call data in flight');
        this.#calls.set(event.id, event.args.length);
        this.#callBytes += event.args.length;
        return PASS;
      case 'out':
        if (this.#calls.has(event.id) || this.#outs.has(event.id)) return breach('an output id in use');
        this.#outBytes += event.chunk.length;
        this.#outs.set(event.id, event.chunk.length);
        return this.#outBytes > b.maxOutBytes ? breach('too much output in flight') : PASS;
      case 'register':
        this.#registrations++;
        this.#registrationBytes += event.meta.length;
        return this.#registrations > b.maxRegistrations || this.#registrationBytes > b.maxRegistrationBytes
          ? breach('over the registration budget')
          : PASS;
      case 'log-limit':
      case 'error-limit':
        // Each is sent once; more would be log lines outside the budget.
        if (this.#notices.has(event.t)) return breach(`a second '${event.t}'`);
        this.#notices.add(event.t);
        return PASS;
      case 'ready':
        if (this.#ready) return DROP;
        this.#ready = true;
        return PASS;
      default:
        return PASS;
    }
  }

  /** The host answered call or output `id`. */
  settled(id: number): void {
    this.#callBytes -= this.#calls.get(id) ?? 0;
    this.#calls.delete(id);
    const size = this.#outs.get(id);
    if (size !== undefined) {
      this.#outBytes -= size;
      this.#outs.delete(id);
    }
  }
}
