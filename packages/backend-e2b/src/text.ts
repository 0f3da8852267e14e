import { escapeControls } from '@mcpsandbox/core';

/**
 * Text that came from the VM (npm's output, envd's error messages, exit statuses) is the
 * attacker's. On its way to the host's terminal its C0 and C1 controls are escaped as everywhere
 * else in mcp-sandbox (core's `escapeControls`), and the bidirectional overrides that reorder
 * what a terminal shows are dropped.
 */
const BIDI = /[\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** Keeps tabs and newlines; escapes every other control character, drops bidi overrides. */
export function stripControl(text: string): string {
  return escapeControls(text).replace(BIDI, '');
}

/** One line for a log message or an error: no controls, whitespace collapsed, at most `max` chars. */
export function oneLine(value: unknown, max = 300): string {
  const text = value instanceof Error ? value.message : String(value);
  const line = stripControl(text).replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 3)}...` : line;
}
