import { contextBootstrap } from './context-bootstrap.js';
import { createRuntime, type RuntimeDeps } from './runtime.js';

/**
 * The child's main program. It is sent as `node -e` source, so the child reads no file at all
 * and the permission model can deny every fs read. Self-contained: only its parameters and
 * Node globals. Protocol: JSON lines; the first line from the parent is `{t:'start', ...}`.
 */
export function childMain(vm: RuntimeDeps['vm'], makeRuntime: typeof createRuntime): void {
  let runtime: ReturnType<typeof createRuntime> | undefined;
  const write = (message: unknown) => {
    process.stdout.write(`${JSON.stringify(message)}\n`);
  };
  // Never touch the reason: it may be a sandbox object whose getters would run here.
  process.on('unhandledRejection', () => {
    runtime?.appError('Error', 'unhandled promise rejection');
  });
  process.on('uncaughtException', () => {
    write({ t: 'crash', reason: 'internal', message: 'uncaught exception in the sandbox process' });
    process.exit(70);
  });
  const onLine = (line: string) => {
    let message: { t?: unknown; config?: unknown; heartbeatMs?: unknown };
    try {
      message = JSON.parse(line) as typeof message;
    } catch {
      return;
    }
    if (message.t === 'start' && runtime === undefined) {
      const heartbeatMs = typeof message.heartbeatMs === 'number' ? message.heartbeatMs : 100;
      runtime = makeRuntime(
        { vm, setTimeout, clearTimeout, setImmediate, now: () => performance.now() },
        message.config as Parameters<typeof createRuntime>[1],
        (event) => {
          write(event);
          if (event.t === 'crash') setImmediate(() => process.exit(0));
        },
      );
      // The parent's watchdog kills this process when these stop (a stuck builtin, say).
      setInterval(() => write({ t: 'hb', rss: process.memoryUsage.rss() }), heartbeatMs);
      runtime.start();
      return;
    }
    runtime?.deliver(message as Parameters<ReturnType<typeof createRuntime>['deliver']>[0]);
  };
  process.stdin.setEncoding('utf8');
  // Pieces of the unfinished line wait in a list; only each new chunk is searched (linear).
  let pieces: string[] = [];
  process.stdin.on('data', (chunk: string) => {
    let start = 0;
    let index = chunk.indexOf('\n');
    while (index >= 0) {
      pieces.push(chunk.slice(start, index));
      const line = pieces.join('');
      pieces = [];
      onLine(line);
      start = index + 1;
      index = chunk.indexOf('\n', start);
    }
    if (start < chunk.length) pieces.push(chunk.slice(start));
  });
  process.stdin.on('end', () => process.exit(0));
}

let cached: string | undefined;

/** The complete `node -e` program of the child. */
export function childSource(): string {
  cached ??= `'use strict';\n(${childMain.toString()})(require('node:vm'), ${createRuntime.toString()});\n`;
  return cached;
}

/** The bootstrap's source text, compiled inside each context. */
export function bootstrapSource(): string {
  return contextBootstrap.toString();
}
