/** The one path `serve` answers on. Its own module: the help text needs it, not the HTTP server. */
export const MCP_PATH = '/mcp';
/** The default of `--max-connections`: far below a default descriptor limit of 1024. */
export const DEFAULT_MAX_CONNECTIONS = 256;
