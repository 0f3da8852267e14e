/**
 * Structured copy across the boundary. Data from the sandbox arrives as JSON text and is rebuilt
 * on the host as null-prototype objects without `__proto__`, `constructor` or `prototype` keys,
 * so a naive host-side merge cannot be polluted; size and depth are capped.
 */

export interface CopyLimits {
  readonly maxBytes: number;
  readonly maxDepth: number;
}

export class BoundaryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BoundaryError';
  }
}

const DROPPED = new Set(['__proto__', 'constructor', 'prototype']);

/** Parses JSON that came from the sandbox into host data that is safe to merge. */
export function parseUntrusted(text: string, limits: CopyLimits): unknown {
  if (text.length > limits.maxBytes) throw new BoundaryError('value too large');
  const parsed: unknown = JSON.parse(text);
  return rebuild(parsed, 0, limits.maxDepth);
}

function rebuild(value: unknown, depth: number, maxDepth: number): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (depth >= maxDepth) throw new BoundaryError('value nested too deeply');
  if (Array.isArray(value)) return value.map((item) => rebuild(item, depth + 1, maxDepth));
  const out = Object.create(null) as Record<string, unknown>;
  for (const key of Object.keys(value)) {
    if (DROPPED.has(key)) continue;
    out[key] = rebuild((value as Record<string, unknown>)[key], depth + 1, maxDepth);
  }
  return out;
}

/** Serializes a host value for the sandbox. `undefined` stays undefined (no payload). */
export function serializeForSandbox(value: unknown, limits: CopyLimits): string | undefined {
  if (value === undefined) return undefined;
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    throw new BoundaryError(`value cannot cross the sandbox boundary: ${(error as Error).message}`);
  }
  if (text === undefined) return undefined;
  if (text.length > limits.maxBytes) throw new BoundaryError('value too large');
  // Checks the depth cap on the way out too.
  parseUntrusted(text, limits);
  return text;
}

/** Name and message of a host error, as plain strings. */
export function describeHostError(error: unknown): { name: string; message: string } {
  if (error instanceof Error)
    return { name: String(error.name).slice(0, 200), message: String(error.message) };
  return { name: 'Error', message: typeof error === 'string' ? error : 'host function failed' };
}
