import { posix, win32 } from 'node:path';
import { UsageError } from '@mcpsandbox/core';

export const CLIENT_IDS = ['claude-desktop', 'claude-code', 'cursor', 'vscode', 'windsurf'] as const;
export type ClientId = (typeof CLIENT_IDS)[number];

export type ConfigScope = 'user' | 'local' | 'project';

/** Where one client keeps its servers: a file and the JSON path(s) of the server maps inside it. */
export interface ConfigLocation {
  readonly client: ClientId;
  readonly scope: ConfigScope;
  readonly file: string;
  /** Paths to `{ "<name>": <entry> }` objects, e.g. `['mcpServers']`. */
  readonly sections: readonly ConfigSection[];
  /** Comments and trailing commas are allowed (the client reads JSONC). */
  readonly comments: boolean;
  /**
   * For a project-scoped config: the project folder. Whoever wrote the repository wrote the
   * file: it must stay inside that folder, and nothing in that folder counts as mcp-sandbox.
   */
  readonly projectRoot?: string;
}

export interface ConfigSection {
  readonly path: readonly string[];
  readonly scope: ConfigScope;
}

export interface ClientSpec {
  readonly id: ClientId;
  readonly name: string;
  readonly serversKey: 'mcpServers' | 'servers';
  readonly comments: boolean;
  readonly hasProjectScope: boolean;
}

/**
 * Per each client's own documentation: Claude Desktop, Claude Code and Windsurf read plain JSON;
 * VS Code reads JSONC, and Cursor (a VS Code fork) accepts comments in mcp.json too.
 */
export const CLIENTS: Readonly<Record<ClientId, ClientSpec>> = {
  'claude-desktop': {
    id: 'claude-desktop',
    name: 'Claude Desktop',
    serversKey: 'mcpServers',
    comments: false,
    hasProjectScope: false,
  },
  'claude-code': {
    id: 'claude-code',
    name: 'Claude Code',
    serversKey: 'mcpServers',
    comments: false,
    hasProjectScope: true,
  },
  cursor: { id: 'cursor', name: 'Cursor', serversKey: 'mcpServers', comments: true, hasProjectScope: true },
  vscode: { id: 'vscode', name: 'VS Code', serversKey: 'servers', comments: true, hasProjectScope: true },
  windsurf: {
    id: 'windsurf',
    name: 'Windsurf',
    serversKey: 'mcpServers',
    comments: false,
    hasProjectScope: false,
  },
};

export function isClientId(value: string): value is ClientId {
  return (CLIENT_IDS as readonly string[]).includes(value);
}

/** What locating a config depends on, all injected. */
export interface LocateContext {
  readonly platform: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
}

function home(ctx: LocateContext): string {
  const value = ctx.platform === 'win32' ? (ctx.env.USERPROFILE ?? ctx.env.HOME) : ctx.env.HOME;
  if (!value) throw new UsageError('HOME is not set: cannot find the client configurations');
  return value;
}

/** The per-user application-data folder: %APPDATA%, ~/Library/Application Support, or XDG_CONFIG_HOME. */
function appData(ctx: LocateContext): string {
  const path = ctx.platform === 'win32' ? win32 : posix;
  if (ctx.platform === 'win32') return ctx.env.APPDATA ?? path.join(home(ctx), 'AppData', 'Roaming');
  if (ctx.platform === 'darwin') return path.join(home(ctx), 'Library', 'Application Support');
  return ctx.env.XDG_CONFIG_HOME || path.join(home(ctx), '.config');
}

/**
 * The config file a client reads, for a scope. `project` is relative to `cwd` (the project root).
 * Throws for a scope the client does not have.
 */
export function locateConfig(client: ClientId, project: boolean, ctx: LocateContext): ConfigLocation {
  const spec = CLIENTS[client];
  const path = ctx.platform === 'win32' ? win32 : posix;
  const servers = (scope: ConfigScope): ConfigSection => ({ path: [spec.serversKey], scope });
  const at = (scope: ConfigScope, file: string, sections: ConfigSection[]): ConfigLocation => ({
    client,
    scope,
    file,
    sections,
    comments: spec.comments,
    ...(scope === 'project' ? { projectRoot: ctx.cwd } : {}),
  });
  if (project && !spec.hasProjectScope) {
    throw new UsageError(`${spec.name} has no project-scoped MCP configuration; drop --project`);
  }
  switch (client) {
    case 'claude-desktop':
      return at('user', path.join(appData(ctx), 'Claude', 'claude_desktop_config.json'), [servers('user')]);
    case 'claude-code':
      if (project) return at('project', path.join(ctx.cwd, '.mcp.json'), [servers('project')]);
      // User scope is the top-level map; "local" scope is the same file, keyed by the project path.
      return at(
        'user',
        ctx.env.CLAUDE_CONFIG_DIR
          ? path.join(ctx.env.CLAUDE_CONFIG_DIR, '.claude.json')
          : path.join(home(ctx), '.claude.json'),
        [servers('user'), { path: ['projects', ctx.cwd, 'mcpServers'], scope: 'local' }],
      );
    case 'cursor':
      if (project) return at('project', path.join(ctx.cwd, '.cursor', 'mcp.json'), [servers('project')]);
      return at('user', path.join(home(ctx), '.cursor', 'mcp.json'), [servers('user')]);
    case 'vscode':
      if (project) return at('project', path.join(ctx.cwd, '.vscode', 'mcp.json'), [servers('project')]);
      return at('user', path.join(appData(ctx), 'Code', 'User', 'mcp.json'), [servers('user')]);
    case 'windsurf':
      return at('user', path.join(home(ctx), '.codeium', 'windsurf', 'mcp_config.json'), [servers('user')]);
  }
}

/** A config file given with `--config`: the client's format, sections as in its user scope. */
export function explicitConfig(client: ClientId, file: string, ctx: LocateContext): ConfigLocation {
  const located = locateConfig(client, false, ctx);
  return { ...located, file };
}
