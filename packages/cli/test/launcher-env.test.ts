import { describe, expect, it } from 'vitest';
import { launcherEnvNames } from '../src/config/launcher-env.js';

// A project config's env block is written by whoever wrote the repository: the names the host
// side reads before any sandbox (where code comes from, which CA is trusted) make the entry
// not sandboxed. The index of a `uvx` install is one of them, as npm's registry is.
describe('launcherEnvNames', () => {
  it('names what chooses where code comes from or what is trusted, npm and uv alike', () => {
    expect(
      launcherEnvNames([
        'GITHUB_TOKEN',
        'npm_config_registry',
        'UV_DEFAULT_INDEX',
        'UV_INDEX_URL',
        'PIP_INDEX_URL',
        'REQUESTS_CA_BUNDLE',
        'CURL_CA_BUNDLE',
        'NODE_OPTIONS',
        'MCP_SANDBOX_BACKEND',
        'BRAVE_API_KEY',
      ]),
    ).toEqual([
      'npm_config_registry',
      'UV_DEFAULT_INDEX',
      'UV_INDEX_URL',
      'PIP_INDEX_URL',
      'REQUESTS_CA_BUNDLE',
      'CURL_CA_BUNDLE',
      'NODE_OPTIONS',
    ]);
  });
});
