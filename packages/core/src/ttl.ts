import type { SandboxSpec } from './contract.js';

/** The longest delay a Node timer holds; a larger one fires at once. */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * Arms a sandbox's TTL, as every backend must: when it elapses, a `ttl-expired` event goes to the
 * spec's listener and `reap` runs. The timer never keeps the host alive by itself. Returns the
 * function that disarms it (call it on close).
 */
export function armTtl(spec: Pick<SandboxSpec, 'ttlMs' | 'onEvent'>, reap: () => void): () => void {
  const timer = setTimeout(
    () => {
      spec.onEvent?.({ type: 'ttl-expired', ttlMs: spec.ttlMs });
      reap();
    },
    Math.min(spec.ttlMs, MAX_TIMER_MS),
  );
  timer.unref();
  return () => clearTimeout(timer);
}
