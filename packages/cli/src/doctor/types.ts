/** ✓ works, ! works with less protection, ✗ does not work (with a fix), · for information. */
export type CheckStatus = 'ok' | 'warn' | 'fail' | 'info';

/** One line of `mcp-sandbox doctor`. */
export interface CheckResult {
  readonly status: CheckStatus;
  /** What was checked, e.g. "bubblewrap". */
  readonly title: string;
  /** What was found. Never a secret's value. */
  readonly summary: string;
  /** What to do about a `fail` or `warn`. */
  readonly fix?: string;
}

/** A fact about this machine, checked on demand. */
export interface DoctorCheck {
  readonly id: string;
  run(): Promise<CheckResult>;
}

/** Whether a backend can run here. */
export interface BackendStatus {
  readonly usable: boolean;
  readonly summary: string;
  readonly fix?: string;
}

export type BackendProbe = () => Promise<BackendStatus>;

/** The output of a program, or why it could not start. Never throws. */
export interface ExecResult {
  /** False when the program could not be started (not found, not executable). */
  readonly started: boolean;
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A file a program name was found as on PATH, and what doctor needs to know before running it. */
export interface ProgramCandidate {
  /** As found: the PATH entry joined with the name (relative when the entry is). */
  readonly path: string;
  /** Its real path (links resolved). */
  readonly real: string;
  /** A native executable (ELF, Mach-O), not a script such as a version manager's shim. */
  readonly native: boolean;
  /**
   * Why a sandbox could have written it (a relative PATH entry, the working folder a server may
   * have mounted read-write, a folder anyone may write); unset when none could. Never run then.
   */
  readonly writable?: string;
}

/**
 * Everything the standard checks read of the machine, so that tests can fake any machine: a
 * Ubuntu 24.04 with AppArmor's user-namespace restriction, a Mac, a box without bubblewrap.
 */
export interface DoctorHost {
  /** `process.platform` of the machine: 'linux', 'darwin', 'win32'. */
  readonly platform: string;
  /** The Node.js running mcp-sandbox, e.g. '20.19.1'; undefined if not known. */
  readonly nodeVersion?: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Runs a program found on PATH (or by its path), with a time limit; from `cwd` when given. */
  exec(file: string, args: readonly string[], options?: { readonly cwd?: string }): Promise<ExecResult>;
  /** Every file `name` is found as on PATH, in PATH order; unset: doctor runs no uv or Python. */
  programs?(name: string): Promise<readonly ProgramCandidate[]>;
  /** The same facts for a file by its absolute path (one a program printed), or undefined. */
  fileFacts?(path: string): Promise<ProgramCandidate | undefined>;
  /** The names in a folder, or undefined if it cannot be read. */
  listDir?(path: string): Promise<readonly string[] | undefined>;
  /** A file's text, or undefined if it cannot be read. */
  readText(path: string): Promise<string | undefined>;
  /**
   * Total size in bytes and number of direct entries of a folder, or undefined if it does not
   * exist; `partial` when the count stopped at its bound (a cache of millions of files).
   */
  folderSize(path: string): Promise<{ bytes: number; entries: number; partial?: boolean } | undefined>;
}

/**
 * What `mcp-sandbox doctor` runs. Every part is optional: without a host it reads the real
 * machine (from `io.env`), without checks it runs `standardChecks(host)`, and a backend without a
 * probe is reported as usable only if it isolates nothing.
 */
export interface DoctorSetup {
  readonly host?: DoctorHost;
  /** Replaces the standard checks; add to them with `[...standardChecks(host), mine]`. */
  readonly checks?: readonly DoctorCheck[];
  /** Whether each backend works here, by registry name. Replaces the default probes. */
  readonly backendProbes?: Readonly<Record<string, BackendProbe>>;
}
