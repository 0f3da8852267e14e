import { posix } from 'node:path';
import { type KnownSecret, knownSecretsOf, secretFlagFor } from '@mcpsandbox/core';
import { serverProgram } from './path-mounts.js';

/** Runners whose first word is an npm package spec. */
const NPM_RUNNERS = new Set(['npx', 'pnpx', 'bunx']);

/**
 * The known secrets of the server an entry starts: by the npm package a runner names, or by the
 * basename of a binary it starts directly. The table in core decides the hosts; nothing the entry
 * says (its env values, its arguments) does.
 */
export function knownSecretsOfServer(argv: readonly string[]): readonly KnownSecret[] {
  const program = serverProgram(argv);
  if (program === undefined) return [];
  const runner = posix.basename((argv[0] ?? '').replace(/\\/g, '/'));
  if (NPM_RUNNERS.has(runner)) return knownSecretsOf(program, 'npm');
  return runner === program ? knownSecretsOf(program, 'command') : [];
}

/** How wrap passes an entry's env block, and why, one line a variable. */
export interface EnvFlags {
  /** `--allow-net` grants for bound hosts not granted yet, then `--secret`s, then `--env`s. */
  readonly args: readonly string[];
  readonly lines: readonly string[];
}

export interface EnvFlagContext {
  /** The server's command line, for the package lookup. */
  readonly server: readonly string[];
  /** The env block's names that no flag given to wrap passes already. */
  readonly keys: readonly string[];
  /** All the block's names (a base-URL variable beside a token is said). */
  readonly envKeys: readonly string[];
  /** The backend wrap writes, and whether it substitutes `--secret` (else `--env` for all). */
  readonly backend: string;
  readonly substitutes: boolean;
  /** `--allow-net` values already in the run options. */
  readonly allowNet: readonly string[];
}

/**
 * Each env-block name becomes `--secret NAME@host` when the server is one whose API host for that
 * name is known and the backend substitutes, with the host granted; `--env NAME` otherwise.
 */
export function envFlagsFor(ctx: EnvFlagContext): EnvFlags {
  const known = knownSecretsOfServer(ctx.server);
  const granted = new Set(ctx.allowNet);
  const grants: string[] = [];
  const secrets: string[] = [];
  const envs: string[] = [];
  const lines: string[] = [];
  for (const key of ctx.keys) {
    const secret = known.find((s) => s.variable === key);
    if (secret === undefined) {
      envs.push('--env', key);
      lines.push(`${key}: --env (its host is not one mcp-sandbox knows for this server)`);
      continue;
    }
    if (!ctx.substitutes) {
      envs.push('--env', key);
      lines.push(
        `${key}: --env, the real value in the sandbox (backend ${ctx.backend} cannot keep it out; --secret needs --backend local)`,
      );
      continue;
    }
    const added = secret.hosts.filter((host) => !granted.has(host));
    for (const host of added) {
      granted.add(host);
      grants.push('--allow-net', host);
    }
    secrets.push('--secret', secretFlagFor(secret));
    const grant = added.length > 0 ? `; --allow-net ${added.join(', ')} added` : '';
    lines.push(
      `${key}: --secret ${secretFlagFor(secret)} (the server gets a stand-in; the real value goes only to ${secret.hosts.join(', ')}${grant}; to pass the real value instead: wrap --update --env ${key})`,
    );
    for (const name of secret.redirectedBy ?? []) {
      if (!ctx.envKeys.includes(name)) continue;
      lines.push(
        `${key}: its env block also sets ${name}: a host other than ${secret.hosts.join(', ')} gets only the stand-in, never the real value`,
      );
    }
  }
  return { args: [...grants, ...secrets, ...envs], lines };
}
