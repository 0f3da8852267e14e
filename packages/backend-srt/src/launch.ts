import type { ChildProcess } from 'node:child_process';
import { SandboxManager } from '@anthropic-ai/sandbox-runtime';
import type { SrtFilesystem, SrtPlatform } from './policy.js';
import { startChild } from './spawn.js';

/** One argument for `sh -c`, whatever bytes it holds. */
export function shellQuote(arg: string): string {
  return `'${arg.replaceAll("'", `'\\''`)}'`;
}

/**
 * The command srt runs in the sandbox: `env -i` first, so that the process gets exactly `env`
 * (srt passes its parent's environment on and adds its own proxy variables).
 */
export function innerCommand(
  command: readonly string[],
  env: Readonly<Record<string, string>>,
  platform: SrtPlatform,
): string {
  const assignments = Object.entries(env).map(([name, value]) => shellQuote(`${name}=${value}`));
  // On Linux the command gets a session of its own, below srt's launcher shell and bridge: that
  // is how SIGTERM finds the command and nothing of srt's (see `commandTree`).
  const session = platform === 'linux' ? ['/usr/bin/setsid'] : [];
  return ['exec', ...session, '/usr/bin/env', '-i', ...assignments, ...command.map(shellQuote)].join(' ');
}

export interface LaunchOptions {
  readonly platform: SrtPlatform;
  readonly filesystem: SrtFilesystem;
  readonly cwd: string;
  /** The launcher's own environment on the host (bash, bwrap, socat): PATH only. */
  readonly hostPath: string;
  /** setpriv (Linux): the launch gets a parent-death signal, so that a killed bridge takes it along. */
  readonly setpriv?: string;
  readonly signal?: AbortSignal;
}

/** Wraps the command with srt's per-command filesystem config and starts it in a process group. */
export async function launch(
  command: readonly string[],
  env: Readonly<Record<string, string>>,
  options: LaunchOptions,
): Promise<ChildProcess> {
  const { argv } = await SandboxManager.wrapWithSandboxArgv(
    innerCommand(command, env, options.platform),
    '/bin/sh',
    { filesystem: options.filesystem },
    options.signal,
    options.cwd,
  );
  const [file, ...args] = argv;
  if (file === undefined) throw new Error('srt returned an empty command');
  // srt's argv starts a shell that runs bwrap as its child: bwrap's --die-with-parent watches
  // that shell, so the shell itself must die with the bridge.
  const hostEnv = { PATH: options.hostPath };
  if (options.setpriv) {
    return startChild(options.setpriv, ['--pdeathsig', 'KILL', '--', file, ...args], {
      env: hostEnv,
      cwd: options.cwd,
    });
  }
  return startChild(file, args, { env: hostEnv, cwd: options.cwd });
}
