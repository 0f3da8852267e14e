/** The one path `serve` answers on. Its own module: the help text needs it, not the HTTP server. */
export const MCP_PATH = '/mcp';
