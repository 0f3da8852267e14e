/** A server's kept writes (`run --state <name>`), as one backend stores them. */
export interface StateEntry {
  readonly name: string;
  readonly path: string;
  readonly bytes: number;
  readonly files: number;
  readonly modified: Date;
  /** The count stopped short (a tree too deep or too large to walk in full): at least this much. */
  readonly partial?: true;
}

/** Where named state lives and how to list and remove it; `apps/cli` wires the local backend's. */
export interface StateStore {
  list(): Promise<{ readonly root: string; readonly states: readonly StateEntry[] }>;
  /** `removed` is false when there was no such state. Throws a SandboxError when it is in use. */
  remove(name: string): Promise<{ readonly root: string; readonly removed: boolean }>;
}
