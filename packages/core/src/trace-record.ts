/** One record of a trace, as read back. */
export interface TraceRecord {
  readonly v: number;
  readonly ts: string;
  readonly t?: number;
  readonly seq: number;
  readonly type: string;
  readonly [field: string]: unknown;
}
