import { PassThrough, Writable } from 'node:stream';
import {
  type BridgeResult,
  type BridgeSession,
  type Logger,
  startBridge,
  type TraceSink,
} from '@mcpsandbox/core';
import type { RunPlan } from '../commands/run.js';
import { withFreshStandIns } from '../commands/secret-plan.js';
import { sandboxOutput } from '../sandbox-output.js';

/** A JSON-RPC message as parsed from one line; only its shape is looked at. */
export type Message = Record<string, unknown>;

export interface UpstreamOptions {
  readonly plan: RunPlan;
  readonly command: readonly string[];
  readonly logger: Logger;
  readonly stderr: NodeJS.WritableStream;
  readonly trace?: TraceSink;
  /** The sandbox's session id (the trace's), one per upstream. */
  readonly sessionId: string;
  /** Values never to be shown: the env secrets and the bearer token. */
  readonly secrets: readonly string[];
}

/** What a session talks to: its own sandboxed server, or its port on a shared one. */
export interface ServerLink {
  send(message: Message): void;
  /** The session is over: like a stdio client closing stdin. */
  close(): void;
  /** Past the close deadline: stop the sandbox now. */
  stop(): void;
  /** Settles when this link can carry nothing more (the sandbox ended). */
  readonly done: Promise<unknown>;
}

/** Starts the server side of one session, given where the server's messages go. */
export type StartLink = (onMessage: (message: Message) => void) => ServerLink;

/**
 * One sandboxed stdio server, run through core's bridge exactly as `run` runs it (policy, trace,
 * TTL, limits), with the client side of the bridge turned into messages in and out.
 */
export class Upstream implements ServerLink {
  readonly session: BridgeSession;
  readonly done: Promise<BridgeResult>;
  readonly #input = new PassThrough();
  #ended = false;

  constructor(options: UpstreamOptions, onMessage: (message: Message) => void) {
    const { plan } = options;
    let pending = '';
    const output = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        pending += chunk.toString('utf8');
        let newline = pending.indexOf('\n');
        while (newline >= 0) {
          const line = pending.slice(0, newline);
          pending = pending.slice(newline + 1);
          const message = parseLine(line);
          if (message) onMessage(message);
          newline = pending.indexOf('\n');
        }
        callback();
      },
    });
    this.session = startBridge({
      backend: plan.backend,
      command: options.command,
      setup: plan.setup,
      spec: { ...withFreshStandIns(plan.spec), sessionId: options.sessionId },
      secrets: options.secrets,
      input: this.#input,
      output,
      errorOutput: sandboxOutput(options.stderr as unknown as Writable),
      logger: options.logger,
      ...(options.trace ? { trace: options.trace } : {}),
      ...(plan.maxLineBytes ? { maxLineBytes: plan.maxLineBytes } : {}),
      timing: plan.timing,
      ...(plan.policy ? { policy: plan.policy } : {}),
    });
    this.done = this.session.done.finally(() => {
      this.#ended = true;
    });
  }

  get ended(): boolean {
    return this.#ended;
  }

  send(message: Message): void {
    if (!this.#ended) this.#input.write(`${JSON.stringify(message)}\n`);
  }

  stop(): void {
    this.session.stop('SIGTERM');
  }

  /** Like a stdio client closing stdin: the bridge drains what is owed, then stops the server. */
  close(): void {
    this.#input.end();
  }
}

function parseLine(line: string): Message | undefined {
  try {
    const value: unknown = JSON.parse(line);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Message)
      : undefined;
  } catch {
    return undefined;
  }
}
