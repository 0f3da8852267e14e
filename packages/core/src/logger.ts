import { escapeControls } from './terminal.js';

/** Console-shaped logger. Everything it prints goes to stderr: stdout belongs to the protocol. */
export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export const DEBUG_ENV = 'MCP_SANDBOX_DEBUG';

export interface StderrLoggerOptions {
  readonly stream?: { write(chunk: string): unknown };
  readonly quiet?: boolean;
  readonly debug?: boolean;
  readonly prefix?: string;
}

export function createStderrLogger(options: StderrLoggerOptions = {}): Logger {
  const stream = options.stream ?? process.stderr;
  const prefix = options.prefix ?? 'mcp-sandbox';
  const debug = options.debug ?? Boolean(process.env[DEBUG_ENV]);
  // Messages quote what servers sent (tool names, ids, stderr): never a control sequence, though.
  const line = (level: string, message: string) =>
    stream.write(`${prefix}: ${level}${escapeControls(message)}\n`);
  return {
    debug: (m) => {
      if (debug) line('debug: ', m);
    },
    info: (m) => {
      if (!options.quiet) line('', m);
    },
    warn: (m) => line('warning: ', m),
    error: (m) => line('error: ', m),
  };
}

/** Every message through `redact` first: for loggers that quote what a server sent. */
export function redactLogger(logger: Logger, redact: (text: string) => string): Logger {
  return {
    debug: (m) => logger.debug(redact(m)),
    info: (m) => logger.info(redact(m)),
    warn: (m) => logger.warn(redact(m)),
    error: (m) => logger.error(redact(m)),
  };
}

export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
};
