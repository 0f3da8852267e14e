/** What a tool is, as the policy sees it, and its digest. */
import { createHash } from 'node:crypto';

export type ToolVerdict =
  | { readonly allowed: true }
  | {
      readonly allowed: false;
      readonly rule: string;
      readonly reason: 'allow' | 'deny' | 'pin' | 'ambiguous';
    };

export interface ToolDescription {
  readonly name: string;
  readonly description?: unknown;
  readonly inputSchema?: unknown;
}

export interface PinChange {
  readonly tool: string;
  readonly change: 'added' | 'changed';
}

export interface PinStore {
  load(): Record<string, string> | undefined;
  /**
   * Records the first pins, once: false (and nothing written) when pins exist already, so that a
   * second session, or a second `serve`, never replaces what the first one pinned.
   */
  create(pins: Record<string, string>): boolean;
  readonly location: string;
}

/** sha256 over the parts of a tool a client shows to a model: name, description, input schema. */
export function digestTool(tool: ToolDescription): string {
  const canonical = canonicalJson({
    name: tool.name,
    description: tool.description ?? null,
    inputSchema: tool.inputSchema ?? null,
  });
  return createHash('sha256').update(canonical).digest('hex');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.keys(value as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
