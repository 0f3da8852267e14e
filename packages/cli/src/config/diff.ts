/**
 * A unified diff of two texts, line by line (Myers' algorithm: fast when the changes are few, as
 * they are when a handful of entries change in a large config).
 */
export function unifiedDiff(
  oldText: string,
  newText: string,
  oldName: string,
  newName: string,
  context = 3,
): string {
  if (oldText === newText) return '';
  const a = splitLines(oldText);
  const b = splitLines(newText);
  const ops = diffLines(a, b);
  const lines: string[] = [`--- ${oldName}`, `+++ ${newName}`];
  // Group the operations into hunks with `context` unchanged lines around each change.
  let i = 0;
  while (i < ops.length) {
    while (i < ops.length && (ops[i] as Op).type === ' ') i++;
    if (i >= ops.length) break;
    let start = Math.max(0, i - context);
    let end = i;
    // Extend while the next change is within 2*context unchanged lines.
    while (end < ops.length) {
      if ((ops[end] as Op).type !== ' ') {
        end++;
        continue;
      }
      let run = 0;
      while (end + run < ops.length && (ops[end + run] as Op).type === ' ') run++;
      if (end + run >= ops.length || run > 2 * context) {
        end = Math.min(ops.length, end + context);
        break;
      }
      end += run;
    }
    if (start < 0) start = 0;
    const hunk = ops.slice(start, end);
    const first = ops[start] as Op;
    const oldCount = hunk.filter((o) => o.type !== '+').length;
    const newCount = hunk.filter((o) => o.type !== '-').length;
    const oldStart = oldCount === 0 ? first.a : first.a + 1;
    const newStart = newCount === 0 ? first.b : first.b + 1;
    lines.push(`@@ -${oldStart},${oldCount} +${newStart},${newCount} @@`);
    for (const op of hunk) {
      const text = op.type === '+' ? (b[op.b] as string) : (a[op.a] as string);
      lines.push(`${op.type}${text.replace(/\r?\n$/, '')}`);
      if (!text.endsWith('\n')) lines.push('\\ No newline at end of file');
    }
    i = end;
  }
  return `${lines.join('\n')}\n`;
}

interface Op {
  readonly type: ' ' | '-' | '+';
  /** Index in the old lines (for ' ' and '-'), or where the old side stands (for '+'). */
  readonly a: number;
  readonly b: number;
}

function splitLines(text: string): string[] {
  const out = text.match(/[^\n]*\n|[^\n]+$/g);
  return out ?? [];
}

function diffLines(a: readonly string[], b: readonly string[]): Op[] {
  const n = a.length;
  const m = b.length;
  const max = n + m;
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  let found = false;
  for (let d = 0; d <= max && !found; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let x: number;
      if (k === -d || (k !== d && (v[offset + k - 1] as number) < (v[offset + k + 1] as number))) {
        x = v[offset + k + 1] as number;
      } else {
        x = (v[offset + k - 1] as number) + 1;
      }
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) {
        found = true;
        break;
      }
    }
  }
  // Walk back through the saved frontiers.
  const ops: Op[] = [];
  let x = n;
  let y = m;
  for (let d = trace.length - 1; d >= 0; d--) {
    const vd = trace[d] as Int32Array;
    const k = x - y;
    let prevK: number;
    if (k === -d || (k !== d && (vd[offset + k - 1] as number) < (vd[offset + k + 1] as number))) {
      prevK = k + 1;
    } else {
      prevK = k - 1;
    }
    const prevX = d === 0 ? 0 : (vd[offset + prevK] as number);
    const prevY = d === 0 ? 0 : prevX - prevK;
    while (x > prevX && y > prevY) {
      x--;
      y--;
      ops.push({ type: ' ', a: x, b: y });
    }
    if (d === 0) break;
    if (x === prevX) {
      y--;
      ops.push({ type: '+', a: x, b: y });
    } else {
      x--;
      ops.push({ type: '-', a: x, b: y });
    }
  }
  return ops.reverse();
}
