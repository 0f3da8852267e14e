import { type Command, Option } from 'commander';
import { CLIENT_IDS, CLIENTS } from '../config/clients.js';
import type { CliOptions } from '../options.js';
import { registerListCommand } from './ls.js';
import { addRunOptions } from './run.js';
import type { TargetFlags, WrapFlags } from './wrap-action.js';

const collect = (value: string, previous: string[]) => [...previous, value];

function addTargetOptions(command: Command, required: boolean): Command {
  const client = new Option('--client <client>', `the MCP client: ${CLIENT_IDS.join(', ')}`).choices(
    CLIENT_IDS,
  );
  if (required) client.makeOptionMandatory();
  return command
    .addOption(client)
    .option('--project', "the client's project config in the current directory instead of the user one")
    .option('--config <file>', "edit this file (in the client's format) instead of the usual location");
}

function addSelectionOptions(command: Command): Command {
  return command
    .option('--server <name>', 'an entry to change (repeatable)', collect, [])
    .option('--all', 'every entry')
    .option('--dry-run', 'print the diff and stop: nothing is written');
}

export function registerWrapCommands(
  program: Command,
  options: CliOptions,
  setExitCode: (code: number) => void,
): void {
  const clients = CLIENT_IDS.map((id) => `${id} (${CLIENTS[id].name})`).join(', ');
  const wrap = program
    .command('wrap')
    .description(
      "Sandbox servers in an MCP client's own config: each entry starts `mcp-sandbox run … -- <its command>`.",
    );
  addSelectionOptions(addTargetOptions(wrap, true))
    .addOption(
      new Option(
        '--launcher <auto|npx|path|file>',
        "how the client starts mcp-sandbox: auto (npx -y mcp-sandbox@<this version> when this is that npm package, else this binary by its absolute path), npx, path (the mcp-sandbox on PATH, as an absolute path), or the path of an mcp-sandbox bin; --update keeps each entry's own unless this is given",
      ).default('auto'),
    )
    .option(
      '--rw',
      'mount the host paths an entry names read-write (default: read-only, but for known writers)',
    )
    .option('--update', 'wrap already wrapped entries anew, with the options given now')
    .option(
      '--keep-state',
      "keep each entry's writes across sessions, under its own name (run --state <name>)",
    );
  addRunOptions(wrap, options).addHelpText(
    'after',
    `
Clients: ${clients}.
Each chosen stdio entry keeps its name, position and other fields; its "env" keys become --env KEY
(values stay in the env block), or --secret KEY@host with --allow-net host for the token of a server
whose API host is known (GitHub, Slack, Brave, Notion, …; backend local: the server gets a stand-in,
the real value goes to that host only; --env KEY keeps the old way), and each host path its arguments name that exists here becomes a
--mount at the same path (read-only unless --rw or the package it starts is a known writer such
as server-filesystem), but never the home, a folder above it, its hidden or settings folders
(keys, tokens, browser profiles), a hidden root or a system folder; each entry's mounts are
printed before anything is written. With --keep-state its writes are kept across sessions (--state <entry name>). Remote (URL) entries are left alone, and so are already sandboxed ones unless
--update is given: then their run options are replaced by the ones given now.
A diff goes to stderr, a timestamped backup is written next to the file, then the file is replaced
atomically. Undo with mcp-sandbox unwrap.

Examples:
  mcp-sandbox wrap --client claude-desktop --all --dry-run
  mcp-sandbox wrap --client cursor --project --server github --backend local --allow-net api.github.com`,
  );
  wrap.action(async (flags: WrapFlags, command: Command) => {
    // The config readers and editors load with wrap, not with every start.
    const { wrapCommand } = await import('./wrap-action.js');
    setExitCode(await wrapCommand(flags, command, options));
  });

  const unwrap = program
    .command('unwrap')
    .description('Undo wrap: each chosen entry starts its own command again, exactly as before.');
  addSelectionOptions(addTargetOptions(unwrap, true))
    .option('-q, --quiet', 'print only warnings and errors on stderr')
    .addHelpText(
      'after',
      `
An entry unchanged since wrap gets its original text back from the newest matching backup (the
whole file is byte-identical when nothing else changed); otherwise the command and arguments are
taken back out of the entry's own "mcp-sandbox run … -- <command>" arguments.`,
    )
    .action(async (flags: TargetFlags & { quiet?: boolean }) => {
      const { unwrapCommand } = await import('./wrap-action.js');
      setExitCode(await unwrapCommand(flags, options));
    });

  registerListCommand(program, options, setExitCode);
}
