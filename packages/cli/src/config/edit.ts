import { getProperty, type JsonNode, type JsonObject } from './jsonc.js';
import { ourCommand, type ServerEntry } from './servers.js';
import { windowsSpelling } from './windows-mounts.js';

/** Replace `[start, end)` of the text with `text`. */
export interface TextEdit {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

export function applyEdits(text: string, edits: readonly TextEdit[]): string {
  const sorted = [...edits].sort((a, b) => b.start - a.start || b.end - a.end);
  let out = text;
  let limit = Number.POSITIVE_INFINITY;
  for (const edit of sorted) {
    if (edit.end > limit) throw new Error('overlapping edits');
    out = out.slice(0, edit.start) + edit.text + out.slice(edit.end);
    limit = edit.start;
  }
  return out;
}

/** What a wrapped entry starts: the launcher (its first word becomes "command") and run's options. */
export interface WrapCommand {
  readonly launcher: readonly string[];
  readonly runArgs: readonly string[];
  /**
   * The server's arguments (without its command) when some are written otherwise than the entry
   * has them: on Windows, paths in their WSL spelling (see windows-mounts.ts). Each changed one
   * replaces its item; the others keep their source text.
   */
  readonly serverArgs?: readonly string[];
}

/** The edits that write each changed server argument in place of the item it replaces. */
function argEdits(items: readonly JsonNode[], from: readonly string[], to: readonly string[] | undefined) {
  if (!to) return [];
  return items.flatMap((item, i) =>
    to[i] !== undefined && to[i] !== from[i]
      ? [{ start: item.start, end: item.end, text: JSON.stringify(to[i]) }]
      : [],
  );
}

function eolOf(text: string): string {
  return text.includes('\r\n') ? '\r\n' : '\n';
}

/** The whitespace before `offset` on its line, if only whitespace precedes it there. */
function lineIndent(text: string, offset: number): string | undefined {
  let i = offset;
  while (i > 0 && (text[i - 1] === ' ' || text[i - 1] === '\t')) i--;
  if (i === 0 || text[i - 1] === '\n') return text.slice(i, offset);
  return undefined;
}

/**
 * The edits that make a stdio entry start `mcp-sandbox run <options> -- <command> <args>`: the
 * "command" value is replaced, and the new arguments are inserted in front of the existing ones
 * (whose source text, comments and layout stay as they are), or an "args" property is added.
 */
export function wrapEdits(text: string, entry: ServerEntry, wrap: WrapCommand): TextEdit[] {
  const obj = entry.property.value as JsonObject;
  const command = getProperty(obj, 'command');
  if (!command) throw new Error(`${entry.name}: no command`);
  const eol = eolOf(text);
  const literals = [
    ...[...wrap.launcher.slice(1), 'run', ...wrap.runArgs, '--'].map((s) => JSON.stringify(s)),
    text.slice(command.value.start, command.value.end),
  ];
  const edits: TextEdit[] = [
    { start: command.value.start, end: command.value.end, text: JSON.stringify(wrap.launcher[0]) },
  ];
  const argsProperty = getProperty(obj, 'args');
  const args = argsProperty?.value;
  if (argsProperty && args?.kind === 'array') {
    const first = args.items[0];
    edits.push(...argEdits(args.items, entry.args, wrap.serverArgs));
    if (!first) {
      const compact = !/\s/.test(text.slice(argsProperty.keyStart, args.start));
      edits.push({ start: args.start + 1, end: args.start + 1, text: literals.join(compact ? ',' : ', ') });
    } else {
      const indent = lineIndent(text, first.start);
      const second = args.items[1];
      // Follow the array's own style: one item a line, compact "a","b", or "a", "b".
      const inline = second && text.slice(first.end, second.start) === ',' ? ',' : ', ';
      const sep = indent === undefined ? inline : `,${eol}${indent}`;
      edits.push({ start: first.start, end: first.start, text: literals.map((l) => l + sep).join('') });
    }
  } else {
    const keyIndent = lineIndent(text, command.keyStart);
    const multiline = text.slice(obj.start, obj.end).includes('\n');
    const compact = !/\s/.test(text.slice(command.keyStart, command.value.start));
    const sep = multiline && keyIndent !== undefined ? `,${eol}${keyIndent}` : compact ? ',' : ', ';
    edits.push({
      start: command.value.end,
      end: command.value.end,
      text: compact ? `${sep}"args":[${literals.join(',')}]` : `${sep}"args": [${literals.join(', ')}]`,
    });
  }
  return edits;
}

/**
 * The edits that wrap an already wrapped entry anew (`wrap --update`): the launcher and every
 * argument before the server's own command are replaced; the server's command and arguments keep
 * their source text.
 */
export function rewrapEdits(text: string, entry: ServerEntry, wrap: WrapCommand): TextEdit[] {
  const { command, items, serverIndex } = wrappedParts(entry);
  const original = items[serverIndex - 1];
  const firstItem = items[0];
  const secondItem = items[1];
  if (!original || !firstItem || !secondItem) throw new Error(`${entry.name}: not a wrapped entry`);
  // The array's own separator, taken from between its first two items.
  const sep = text.slice(firstItem.end, secondItem.start);
  const literals = [...wrap.launcher.slice(1), 'run', ...wrap.runArgs, '--'].map((s) => JSON.stringify(s));
  return [
    { start: command.value.start, end: command.value.end, text: JSON.stringify(wrap.launcher[0]) },
    { start: firstItem.start, end: original.start, text: literals.map((l) => l + sep).join('') },
  ];
}

function wrappedParts(entry: ServerEntry) {
  const wrapped = ourCommand(entry);
  const obj = entry.property.value as JsonObject;
  const command = getProperty(obj, 'command');
  const args = getProperty(obj, 'args')?.value;
  if (!wrapped || !command || args?.kind !== 'array') throw new Error(`${entry.name}: not a wrapped entry`);
  // argv = [command, ...args]; the server's command is argv[serverIndex], i.e. args[serverIndex - 1].
  return { command, args, items: args.items, serverIndex: 1 + args.items.length - wrapped.server.length };
}

/** The text of an entry's value after the edits that fall inside it. */
export function editedSlice(text: string, node: JsonNode, edits: readonly TextEdit[]): string {
  const shifted = edits.map((e) => ({ start: e.start - node.start, end: e.end - node.start, text: e.text }));
  return applyEdits(text.slice(node.start, node.end), shifted);
}

/**
 * Takes `mcp-sandbox run … --` back out of a wrapped entry, from its own arguments: the original
 * command's source text moves back into "command" and the inserted arguments are removed. Exact
 * for entries that had arguments before; an entry that had none keeps an empty "args".
 */
export function unwrapEdits(text: string, entry: ServerEntry): TextEdit[] {
  const { command, args, items, serverIndex } = wrappedParts(entry);
  const original = items[serverIndex - 1];
  const firstArg = items[serverIndex];
  const firstItem = items[0];
  if (!original || !firstItem) throw new Error(`${entry.name}: not a wrapped entry`);
  const edits: TextEdit[] = [
    { start: command.value.start, end: command.value.end, text: text.slice(original.start, original.end) },
  ];
  if (firstArg) edits.push({ start: firstItem.start, end: firstArg.start, text: '' });
  else edits.push({ start: args.start, end: args.end, text: '[]' });
  return [...edits, ...windowsArgsBack(entry, items.slice(serverIndex))];
}

/**
 * Windows: the paths wrap wrote in their WSL spelling (each one a mount of the entry) go back to
 * the Windows spelling they had, which wrap translated only when it could be turned back exactly.
 */
function windowsArgsBack(entry: ServerEntry, items: readonly JsonNode[]): TextEdit[] {
  const wrapped = ourCommand(entry);
  if (wrapped?.checked.kind !== 'wsl') return [];
  const mounted = new Set<string>();
  wrapped.runArgs.forEach((arg, i) => {
    const spec = wrapped.runArgs[i + 1];
    if (arg === '--mount' && spec) mounted.add(spec.split(':')[0] as string);
  });
  const args = wrapped.server.slice(1);
  const back = args.map((word) => {
    const eq = word.startsWith('-') ? word.indexOf('=') : -1;
    const path = eq === -1 ? word : word.slice(eq + 1);
    const windows = mounted.has(path) ? windowsSpelling(path) : undefined;
    return windows === undefined ? word : `${word.slice(0, eq + 1)}${windows}`;
  });
  return argEdits(items, args, back);
}
