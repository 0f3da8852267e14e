import { describe, expect, it } from 'vitest';
import { knownSecretHosts, knownSecretsOf, npmPackageName, secretFlagFor } from './known-secrets.js';
import { parseSecretFlag } from './secret-binding.js';

describe('known secrets', () => {
  it('finds a package by its name, with or without a version or dist-tag', () => {
    for (const spec of [
      '@modelcontextprotocol/server-github',
      '@modelcontextprotocol/server-github@2025.4.8',
      '@modelcontextprotocol/server-github@latest',
    ]) {
      expect(knownSecretsOf(spec, 'npm').map(secretFlagFor)).toEqual([
        'GITHUB_PERSONAL_ACCESS_TOKEN@api.github.com',
      ]);
    }
    expect(knownSecretsOf('tavily-mcp', 'npm').map(secretFlagFor)).toEqual([
      'TAVILY_API_KEY@api.tavily.com:body',
    ]);
    expect(knownSecretsOf('github-mcp-server', 'command').map(secretFlagFor)).toEqual([
      'GITHUB_PERSONAL_ACCESS_TOKEN@api.github.com',
    ]);
  });

  it('knows nothing of a spec that names another package, a look-alike, or a binary of an npm name', () => {
    for (const spec of [
      '@modelcontextprotocol/server-github@npm:evil-server',
      '@modelcontextprotocol/server-github@https://evil.example/x.tgz',
      '@modelcontextprotocol/server-github@file:../x',
      '@ModelContextProtocol/server-github',
      '@modelcontextprotocol/server-github/../evil',
      'github:modelcontextprotocol/server-github',
      './@modelcontextprotocol/server-github',
      '@modelcontextprotocol/server-githubx',
      ' @modelcontextprotocol/server-github',
    ]) {
      expect(knownSecretsOf(spec, 'npm')).toEqual([]);
    }
    // The npm package of that name is another project than GitHub's binary.
    expect(knownSecretsOf('github-mcp-server', 'npm')).toEqual([]);
    expect(knownSecretsOf('@modelcontextprotocol/server-github', 'command')).toEqual([]);
    expect(npmPackageName('a@1.0.0@2')).toBeUndefined();
  });

  it('every row makes a flag run accepts', () => {
    for (const program of ['@sentry/mcp-server', 'tavily-mcp', '@modelcontextprotocol/server-gitlab']) {
      for (const secret of knownSecretsOf(program, 'npm')) {
        const parsed = parseSecretFlag(secretFlagFor(secret));
        expect(parsed.name).toBe(secret.variable);
        expect(parsed.hosts).toEqual(secret.hosts);
      }
    }
  });

  it('names the hosts of a variable only when every server that reads it agrees', () => {
    expect(knownSecretHosts('BRAVE_API_KEY')).toEqual(['api.search.brave.com']);
    expect(knownSecretHosts('GITHUB_PERSONAL_ACCESS_TOKEN')).toEqual(['api.github.com']);
    expect(knownSecretHosts('OPENAI_API_KEY')).toEqual(['api.openai.com']);
    expect(knownSecretHosts('ES_URL')).toBeUndefined();
    expect(knownSecretHosts('constructor')).toBeUndefined();
  });
});
