import { PYTHON_HASH, PYTHON_NAME, PYTHON_VERSION, type PythonDist } from '@mcpsandbox/core';

/**
 * `uv pip compile --generate-hashes` output, parsed in full: `name==version \` lines each
 * followed by `--hash=sha256:…` lines. Anything else (a URL, a path, an editable, an option) is
 * refused: the install is then made from nothing but validated names, versions and hashes.
 */
export function parseCompiled(text: string): PythonDist[] | undefined {
  const dists: PythonDist[] = [];
  let current: { name: string; version: string; hashes: string[] } | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\\$/, '').trim();
    if (line === '' || line.startsWith('#')) continue;
    const hash = /^--hash=(\S+)$/.exec(line);
    if (hash) {
      if (!current || !PYTHON_HASH.test(hash[1]!)) return undefined;
      current.hashes.push(hash[1]!);
      continue;
    }
    const pin = /^([^=\s;]+)==([^\s;]+)$/.exec(line);
    if (!pin || !PYTHON_NAME.test(pin[1]!) || !PYTHON_VERSION.test(pin[2]!)) return undefined;
    current = { name: pin[1]!, version: pin[2]!, hashes: [] };
    dists.push(current);
  }
  if (dists.length === 0 || dists.some((dist) => dist.hashes.length === 0)) return undefined;
  return dists;
}

/** The requirements file the install gets: from the pin's validated values only. */
export function requirementsText(dists: readonly PythonDist[]): string {
  return dists
    .map((dist) =>
      [`${dist.name}==${dist.version}`, ...dist.hashes.map((hash) => `    --hash=${hash}`)].join(' \\\n'),
    )
    .join('\n')
    .concat('\n');
}

/**
 * What uv's refusal of a pinned artifact names: `Hash mismatch for \`pkg==1.0\``, with the
 * expected and computed hashes. Undefined when the output is about something else.
 */
export function hashMismatch(output: string): string | undefined {
  const match = /Hash mismatch for `([^`\n]{1,200})`/.exec(output);
  if (!match) return undefined;
  const computed = /Computed:\s*\n?\s*(sha256:[0-9a-f]{64})/.exec(output)?.[1];
  const what = match[1]!.replace(/[^\x20-\x7e]/g, '?');
  return computed ? `${what} (the index now serves sha256 ${computed.slice(7)})` : what;
}
