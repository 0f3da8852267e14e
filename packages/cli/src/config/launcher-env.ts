/**
 * Variables the host side of mcp-sandbox (node, npx, the launcher, bwrap, the install step)
 * reads before or around any sandbox: set in a config entry's env block, they choose what runs on
 * the host, where code comes from, or which CA is trusted. An env block's other names are the
 * server's own (tokens, settings) and are passed into the sandbox, so these are named, not allowed.
 */
const EXACT = new Set([
  'PATH',
  'HOME',
  'USERPROFILE',
  'APPDATA',
  'LOCALAPPDATA',
  'TMPDIR',
  'NODE_OPTIONS',
  'NODE_PATH',
  'NODE_EXTRA_CA_CERTS',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'REQUESTS_CA_BUNDLE',
  'CURL_CA_BUNDLE',
  'XDG_CONFIG_HOME',
  'XDG_CACHE_HOME',
  'XDG_STATE_HOME',
  'XDG_DATA_HOME',
  'XDG_RUNTIME_DIR',
  'E2B_DOMAIN',
  'E2B_API_URL',
  'E2B_SANDBOX_URL',
]);
// uv_ and pip_: the index a `uvx` install reaches (UV_DEFAULT_INDEX, UV_INDEX_URL, PIP_INDEX_URL).
const PREFIXES = ['npm_config_', 'uv_', 'pip_', 'ld_', 'dyld_', 'mcp_sandbox_'];
/** mcp-sandbox's own variables that are judged (the backend) or harmless (debug output). */
const OWN = new Set(['MCP_SANDBOX_BACKEND', 'MCP_SANDBOX_DEBUG']);

/** The names of `keys` that the host side reads, in their order. */
export function launcherEnvNames(keys: readonly string[]): string[] {
  return keys.filter((key) => {
    if (OWN.has(key)) return false;
    const lower = key.toLowerCase();
    return EXACT.has(key.toUpperCase()) || PREFIXES.some((p) => lower.startsWith(p));
  });
}
