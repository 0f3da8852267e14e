/**
 * The quota while an install step runs: the host counts the install prefix again and again and
 * kills the step at the first count past its budget, so an install script that floods its cache
 * entry is stopped mid-way, in the foreground and in the background worker alike. Between two
 * counts a script can write what the disk takes in that time: the seal then counts again,
 * exactly, when nothing writes any more (npx.ts), and refuses the entry.
 */
import type { OpenDir } from '../host-fs.js';
import { measureTree, TreeCounter, type TreeOver } from '../tree-usage.js';
import { type InstallBudget, type InstallQuotaError, quotaError } from './quota.js';

/** The shortest pause between two counts. */
const POLL_MS = 250;
/**
 * The pause is at least this many times the last count's own time: counting takes at most ~1/10
 * of a core (a count of a 4,500-file install takes 45-100 ms here; at 1/5 of a core a fresh
 * install of server-everything took measurably longer than without the watch).
 */
const PAUSE_FACTOR = 9;

/** Guards one install's steps; each step is watched while it runs. */
export class InstallGuard {
  #over: TreeOver | undefined;

  constructor(
    private readonly prefix: OpenDir,
    private readonly budget: InstallBudget,
    private readonly spec: string,
  ) {}

  /** Counts the prefix until `stop()`; past the budget, calls `kill` once and stops. */
  watch(kill: () => void): () => void {
    let timer: NodeJS.Timeout | undefined;
    let stopped = false;
    const tick = () => {
      if (stopped) return;
      const started = performance.now();
      const result = measureTree(this.prefix, this.budget.limit);
      if (typeof result === 'string') {
        this.#over = result;
        stopped = true;
        kill();
        return;
      }
      const pause = Math.max(POLL_MS, PAUSE_FACTOR * (performance.now() - started));
      timer = setTimeout(tick, pause);
    };
    timer = setTimeout(tick, POLL_MS);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }

  /**
   * The refusal, when a count went past the budget: the watch's, or this one, made after the
   * step ended (what it wrote since the last count).
   */
  finalCount(): InstallQuotaError | undefined {
    if (this.#over === undefined) {
      const result = measureTree(this.prefix, this.budget.limit);
      if (typeof result === 'string') this.#over = result;
    }
    return this.#over === undefined ? undefined : quotaError(this.spec, this.budget, this.#over);
  }

  /** The watch's refusal, when one of its counts went past the budget; no count of its own. */
  refusal(): InstallQuotaError | undefined {
    return this.#over === undefined ? undefined : quotaError(this.spec, this.budget, this.#over);
  }

  /** The seal's counter: the same budget, the same refusal. */
  counter(): TreeCounter {
    return new TreeCounter(this.budget.limit, (over) => quotaError(this.spec, this.budget, over));
  }
}
