import { readFileSync } from 'node:fs';

/**
 * The fenced code blocks of the docs, and how the docs test reads them.
 *
 * A block is run, checked, or marked. The marker is an HTML comment on the nearest non-blank
 * line above the fence:
 *   `<!-- illustrative: <why it cannot run here> -->`  not run (needs an E2B key, a client app, …)
 *   `<!-- docs-test: <fixture> -->`                     run after the named fixture of the test
 * Unmarked, a `console` block is run (`$ ` lines are commands, the lines after each are its
 * output), a `sh` block is run (each command must succeed), a `ts`/`js` block is typechecked
 * against the built packages. Any other block must be marked.
 */
export type Marker =
  | { readonly kind: 'illustrative'; readonly reason: string }
  | { readonly kind: 'fixture'; readonly name: string };

export interface DocBlock {
  /** Repository-relative file, and the 1-based line of the opening fence. */
  readonly file: string;
  readonly line: number;
  readonly lang: string;
  readonly body: string;
  readonly marker?: Marker;
  /** A marker comment that is neither form: reported, never ignored. */
  readonly badMarker?: string;
}

const FENCE = /^(\s*)(`{3,})\s*([\w-]*)/;
const MARKER = /^\s*<!--\s*(illustrative|docs-test)\s*:\s*(.*?)\s*-->\s*$/;

export function extractBlocks(root: string, file: string): DocBlock[] {
  const lines = readFileSync(`${root}/${file}`, 'utf8').split('\n');
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i] as string);
    if (!open) continue;
    const [, indent = '', ticks = '', lang = ''] = open;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const text = lines[j] as string;
      if (text.trim().startsWith(ticks) && text.trim().replace(/`/g, '') === '') break;
      body.push(text.startsWith(indent) ? text.slice(indent.length) : text.trimStart());
    }
    blocks.push({ file, line: i + 1, lang, body: body.join('\n'), ...markerAbove(lines, i) });
    i = j;
  }
  return blocks;
}

function markerAbove(lines: readonly string[], fence: number): { marker?: Marker; badMarker?: string } {
  let k = fence - 1;
  while (k >= 0 && (lines[k] as string).trim() === '') k--;
  const above = k >= 0 ? (lines[k] as string) : '';
  if (!/^\s*<!--/.test(above)) return {};
  const match = MARKER.exec(above);
  if (!match?.[2]) return /illustrative|docs-test/.test(above) ? { badMarker: above.trim() } : {};
  return match[1] === 'illustrative'
    ? { marker: { kind: 'illustrative', reason: match[2] } }
    : { marker: { kind: 'fixture', name: match[2] } };
}

export interface ConsoleStep {
  readonly command: string;
  readonly expected: readonly string[];
}

/** `$ ` lines are commands (a trailing `\` continues one); the lines up to the next are its output. */
export function consoleSteps(body: string): ConsoleStep[] {
  const steps: Array<{ command: string; expected: string[] }> = [];
  const lines = body.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i] as string;
    if (text.startsWith('$ ')) {
      let command = text.slice(2);
      while (command.endsWith('\\') && i + 1 < lines.length) command = `${command.slice(0, -1)}${lines[++i]}`;
      steps.push({ command, expected: [] });
    } else if (steps.length > 0) {
      (steps[steps.length - 1] as { expected: string[] }).expected.push(text);
    }
  }
  return steps;
}

/**
 * What legitimately varies between the docs and a run, replaced the same way on both sides:
 * the temporary home reads as /home/me; timestamps, UUIDs, sizes, durations, versions, npm
 * integrities, file counts and measured figures (decimals) become placeholders; runs of spaces (table column widths) are one
 * space; trailing spaces go.
 */
export function normalise(text: string, home: string): string {
  return text
    .split(home)
    .join('/home/me')
    .replace(ANSI, '')
    .replace(/\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z\b/g, '<time>')
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g, '<id>')
    .replace(/\bsha512-[A-Za-z0-9+/=]+…?/g, '<integrity>')
    .replace(/\b\d+(\.\d+)? (B|KiB|MiB|GiB)\b/g, '<size>')
    .replace(/\b\d+(\.\d+)? ?(µs|ms|s)\b/g, '<duration>')
    .replace(/\b\d+\.\d+\.\d+(-[0-9A-Za-z.]+)?\b/g, '<version>')
    .replace(/\b\d+ file\(s\)/g, '<n> file(s)')
    .replace(/\b\d+\.\d+\b/g, '<number>')
    .split('\n')
    .map((l) => l.replace(/[ \t]+/g, ' ').trimEnd())
    .join('\n');
}

// Terminal colour codes, written without a control character in the source.
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*[A-Za-z]`, 'g');

const ELLIPSIS = /^\s*…\s*$/;

/**
 * Whether `actual` lines are `expected` lines, where an expected line that is only `…` stands
 * for any number of lines (the docs leave them out). Returns the first mismatch, or undefined.
 */
export function mismatch(expected: readonly string[], actual: readonly string[]): string | undefined {
  const exp = trimBlank(expected);
  const act = trimBlank(actual);
  const memo = new Map<string, boolean>();
  const fits = (e: number, a: number): boolean => {
    const key = `${e}:${a}`;
    const known = memo.get(key);
    if (known !== undefined) return known;
    let ok: boolean;
    if (e === exp.length) ok = a === act.length;
    else if (ELLIPSIS.test(exp[e] as string)) ok = fits(e + 1, a) || (a < act.length && fits(e, a + 1));
    else ok = a < act.length && exp[e] === act[a] && fits(e + 1, a + 1);
    memo.set(key, ok);
    return ok;
  };
  if (fits(0, 0)) return undefined;
  // Point at the first line that differs from a straight reading, for the message.
  for (let i = 0; i < Math.max(exp.length, act.length); i++) {
    if (ELLIPSIS.test(exp[i] ?? '')) break;
    if (exp[i] !== act[i])
      return `line ${i + 1}: the docs show ${show(exp[i])}, the run printed ${show(act[i])}`;
  }
  return 'the lines after a `…` do not match the output that follows';
}

function show(line: string | undefined): string {
  return line === undefined ? '(nothing)' : JSON.stringify(line);
}

function trimBlank(lines: readonly string[]): string[] {
  const out = [...lines];
  while (out.length > 0 && (out[0] as string).trim() === '') out.shift();
  while (out.length > 0 && (out[out.length - 1] as string).trim() === '') out.pop();
  return out;
}

/** Lines mcp-sandbox logs while it starts a server; left out of a block that shows none of them. */
export function isProgressLine(line: string): boolean {
  return /^(mcp-sandbox: |\[sandbox\]( |$))/.test(line);
}
