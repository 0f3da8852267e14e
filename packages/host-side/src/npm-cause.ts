/**
 * npm's own reason for a failed install, read from its `npm error code …` line: the output is the
 * package's and the registry's to write, so only the code is taken, checked against a shape, and
 * the sentence shown is this module's. What the package printed stays in the log.
 */
export type NpmCause =
  | { readonly kind: 'http'; readonly status: number }
  | { readonly kind: 'script'; readonly exit: number; readonly pkg: string | undefined }
  | { readonly kind: 'resolve-host'; readonly code: string }
  | { readonly kind: 'connect'; readonly code: string }
  | { readonly kind: 'no-version' }
  | { readonly kind: 'peer-conflict' }
  | { readonly kind: 'integrity' }
  | { readonly kind: 'other'; readonly code: string };

const CODE_LINE = /^npm (?:error|ERR!) code (\S+)$/;
const PATH_LINE = /^npm (?:error|ERR!) path \S*\/node_modules\/((?:@[^/\s]+\/)?[^/\s]+)$/;
const ERRNO_LINE = /^npm (?:error|ERR!) errno (\d{1,3})$/;
/** npm's rules for a package name (lower case, at most 214, an optional scope). */
const PACKAGE_NAME = /^(?:@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*$/;
const ERROR_CODE = /^E[A-Z0-9_]{1,31}$/;

/**
 * The last `npm error code` of `lines` (the install's output, unescaped), as a validated cause.
 * The last: npm writes its error block at the end, after anything a script printed itself.
 */
export function parseNpmCause(lines: readonly string[]): NpmCause | undefined {
  const at = lines.findLastIndex((line) => CODE_LINE.test(line));
  if (at === -1) return undefined;
  const code = CODE_LINE.exec(lines[at] as string)?.[1] as string;
  const status = /^E([1-5]\d\d)$/.exec(code);
  if (status) return { kind: 'http', status: Number(status[1]) };
  // npm ≥ 7 gives a failed script's exit code as the code; npm 6 said ELIFECYCLE and the errno.
  const exit = /^\d{1,3}$/.test(code)
    ? Number(code)
    : code === 'ELIFECYCLE'
      ? Number(lines.map((l) => ERRNO_LINE.exec(l)?.[1]).find((n) => n !== undefined) ?? 1)
      : undefined;
  if (exit !== undefined) return { kind: 'script', exit, pkg: scriptPackage(lines.slice(at, at + 4)) };
  switch (code) {
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return { kind: 'resolve-host', code };
    case 'ECONNREFUSED':
    case 'ECONNRESET':
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return { kind: 'connect', code };
    case 'ETARGET':
    case 'ENOVERSIONS':
      return { kind: 'no-version' };
    case 'ERESOLVE':
      return { kind: 'peer-conflict' };
    case 'EINTEGRITY':
      return { kind: 'integrity' };
  }
  return ERROR_CODE.test(code) ? { kind: 'other', code } : undefined;
}

/**
 * The path below `inside` of the package whose script failed: npm's `npm error path` line within
 * the four lines after its last `npm error code` line. Undefined if none, or not below `inside`.
 */
export function failedScriptPath(lines: readonly string[], inside: string): string | undefined {
  const at = lines.findLastIndex((line) => CODE_LINE.test(line));
  if (at === -1) return undefined;
  for (const line of lines.slice(at + 1, at + 4)) {
    const path = /^npm (?:error|ERR!) path (\S+)$/.exec(line)?.[1];
    if (path?.startsWith(`${inside}/`)) return path.slice(inside.length + 1);
  }
  return undefined;
}

function scriptPackage(lines: readonly string[]): string | undefined {
  for (const line of lines) {
    const name = PATH_LINE.exec(line)?.[1];
    if (name !== undefined && name.length <= 214 && PACKAGE_NAME.test(name)) return name;
  }
  return undefined;
}

/** One sentence for the user, built from the validated cause only. */
export function describeNpmCause(cause: NpmCause): string {
  switch (cause.kind) {
    case 'http':
      return cause.status === 404
        ? 'the registry has no such package or version (HTTP 404)'
        : `the registry answered HTTP ${cause.status}`;
    case 'script':
      return `an install script${cause.pkg ? ` of ${cause.pkg}` : ''} exited with code ${cause.exit}`;
    case 'resolve-host':
      return `a host npm needed does not resolve from the install step (${cause.code})`;
    case 'connect':
      return `a connection npm needed failed (${cause.code})`;
    case 'no-version':
      return 'no published version matches the version asked for';
    case 'peer-conflict':
      return 'npm could not resolve the dependency tree (conflicting peer dependencies)';
    case 'integrity':
      return 'a downloaded tarball does not match its integrity hash';
    case 'other':
      return `npm failed with ${cause.code}`;
  }
}
