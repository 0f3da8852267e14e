/**
 * Text that came from the VM (npm's output, envd's error messages, exit statuses) is the
 * attacker's: before it reaches the host's terminal it loses every control character, so it can
 * neither move the cursor, retitle the window nor hide a line. A shared sanitizer for all of
 * stderr belongs in core; this is the backend's own until then.
 */

// C0 controls except tab and newline, DEL, C1 controls, and the bidirectional overrides that
// reorder what a terminal shows.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding them is the point
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** Keeps tabs and newlines; removes every other control character. */
export function stripControl(text: string): string {
  return text.replace(CONTROL, '');
}

/** One line for a log message or an error: no controls, whitespace collapsed, at most `max` chars. */
export function oneLine(value: unknown, max = 300): string {
  const text = value instanceof Error ? value.message : String(value);
  const line = stripControl(text).replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 3)}...` : line;
}
