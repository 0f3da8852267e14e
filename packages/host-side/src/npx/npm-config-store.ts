/**
 * The host npm's answers kept in the install cache root, each under the digest of everything
 * npm read to give it (npm-config-inputs.ts). Only the host writes the root; the file is read
 * no-follow and validated field by field, and anything unexpected is an empty store: the worst
 * a damaged store can do is cost a start the npm run it saves.
 */
import { randomBytes } from 'node:crypto';
import { closeDir, type OpenDir, openOwnedDir, readFileAt, writeFileAt } from '../host-fs.js';
import type { HostNpmConfig } from '../install-job.js';

const STORE = 'npm-config.json';
const FORMAT = 1;
const MAX_STORE_BYTES = 64 * 1024;
/** One answer per working directory and environment in use; the oldest goes first. */
const MAX_RECORDS = 16;

export interface StoredAnswer {
  readonly inputs: string;
  readonly answer: HostNpmConfig;
}

export interface NpmConfigStore {
  /** Salts the digests: a digest of variables that hold tokens is not a bare hash of them. */
  readonly salt: string;
  readonly records: readonly StoredAnswer[];
}

/** The salt of a store this process starts: the same for each read until one is written. */
let freshSalt: string | undefined;

/** The store under `cacheRoot`; a fresh, empty one when there is none or it does not validate. */
export function readNpmConfigStore(cacheRoot: string): NpmConfigStore {
  freshSalt ??= randomBytes(16).toString('hex');
  const fresh = { salt: freshSalt, records: [] };
  let root: OpenDir | undefined;
  try {
    root = openOwnedDir(cacheRoot);
    const bytes = readFileAt(root, [STORE], MAX_STORE_BYTES);
    return (bytes && parseStore(bytes.toString('utf8'))) ?? fresh;
  } catch {
    return fresh;
  } finally {
    closeDir(root);
  }
}

/** Adds `record` (newest first) and writes the store, if the cache root exists and is ours. */
export function storeNpmAnswer(cacheRoot: string, store: NpmConfigStore, record: StoredAnswer): void {
  const records = [record, ...store.records.filter((r) => r.inputs !== record.inputs)].slice(0, MAX_RECORDS);
  let root: OpenDir | undefined;
  try {
    root = openOwnedDir(cacheRoot);
    // No sync: a store lost in a crash costs one npm run.
    writeFileAt(root, STORE, JSON.stringify({ format: FORMAT, salt: store.salt, records }), 0o600, {
      durable: false,
    });
  } catch {
    // A store that cannot be written only makes the next start ask npm again.
  } finally {
    closeDir(root);
  }
}

function parseStore(text: string): NpmConfigStore | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObject(value) || value.format !== FORMAT || typeof value.salt !== 'string') return undefined;
  if (!/^[0-9a-f]{32}$/.test(value.salt) || !Array.isArray(value.records)) return undefined;
  const records: StoredAnswer[] = [];
  for (const entry of value.records.slice(0, MAX_RECORDS)) {
    if (!isObject(entry) || typeof entry.inputs !== 'string' || !/^[0-9a-f]{64}$/.test(entry.inputs)) {
      return undefined;
    }
    const answer = validNpmConfig(entry.answer);
    if (!answer) return undefined;
    records.push({ inputs: entry.inputs, answer });
  }
  return { salt: value.salt, records };
}

/**
 * A HostNpmConfig from npm's words or the store's: the same checks either way. The cache path
 * is user-written config, checked again before any use (user-npm-cache.ts).
 */
export function validNpmConfig(value: unknown): HostNpmConfig | undefined {
  if (!isObject(value)) return undefined;
  const { registry, cafile, strictSsl, cache } = value;
  if (typeof registry !== 'string' || !/^https?:\/\/[^\s]+$/.test(registry)) return undefined;
  if (cafile !== undefined && (typeof cafile !== 'string' || !cafile.startsWith('/'))) return undefined;
  if (typeof strictSsl !== 'boolean') return undefined;
  if (cache !== undefined && typeof cache !== 'string') return undefined;
  return { registry, cafile, strictSsl, cache };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
