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

/**
 * uv's own reason for a failed step, in one line: the index's HTTP status, a resolution with no
 * solution, or a source distribution whose build failed. Built from uv's output (which build
 * code can print into): bounded, printable ASCII only. Undefined when none of these is said.
 */
export function uvCause(output: string): string | undefined {
  const clean = (text: string, max = 200) => text.replace(/[^\x20-\x7e]/g, '?').slice(0, max);
  const status =
    /HTTP status (?:client|server) error \((\d{3})[^)\n]{0,60}\) for url \(([^)\s]{1,300})\)/.exec(output);
  if (status) return `the index answered HTTP ${status[1]} for ${clean(status[2] ?? '')}`;
  const index = /An index \(([^)\s]{1,300})\) returned an? (\d{3})\b/.exec(output);
  if (index) return `the index ${clean(index[1] ?? '')} answered HTTP ${index[2]}`;
  if (/No solution found when resolving/.test(output)) {
    const because = /(Because [^\n]{1,400})/.exec(output)?.[1];
    return `no set of versions satisfies it${because ? `: ${clean(because, 400)}` : ''}`;
  }
  const build = /Failed to build `([^`\n]{1,200})`/.exec(output);
  if (build)
    return `building ${clean(build[1] ?? '')} from its source distribution failed (its output is below)`;
  const fetch = /Failed to (?:fetch|download)[^\n]{0,40}`([^`\n]{1,300})`/.exec(output);
  if (fetch) return `uv could not fetch ${clean(fetch[1] ?? '')}`;
  return undefined;
}
