/**
 * Servers whose token goes to one known API host: what `wrap` turns into `--secret NAME@host`,
 * and what the withheld-variable hint suggests. Each row was read from the package's own code
 * or README at the version named (the variable it reads, the host its requests go to, the header
 * the token travels in); a package not listed here keeps `--env`.
 *
 * The hosts come only from this table, looked up by a validated package name: nothing in a
 * client's config (an env value, an argument, a base-URL variable) chooses where a real value goes.
 */

/** One variable of a known server: the hosts its real value may go to. */
export interface KnownSecret {
  readonly variable: string;
  readonly hosts: readonly string[];
  /** The server also puts the token in request bodies (`:body`). */
  readonly body?: boolean;
  /** Variables that point the server at another host (a self-hosted instance): said by wrap. */
  readonly redirectedBy?: readonly string[];
}

interface KnownServer {
  /** npm package (`npx`, `pnpx`, `bunx`) or, for `command`, the basename of a binary. */
  readonly program: string;
  readonly kind: 'npm' | 'command';
  /** Where the variable and host were read. */
  readonly source: string;
  readonly secrets: readonly KnownSecret[];
}

const GITHUB = { variable: 'GITHUB_PERSONAL_ACCESS_TOKEN', hosts: ['api.github.com'] } as const;
const OPENAI = { variable: 'OPENAI_API_KEY', hosts: ['api.openai.com'] } as const;

const KNOWN_SERVERS: readonly KnownServer[] = [
  {
    program: '@modelcontextprotocol/server-github',
    kind: 'npm',
    source: '2025.4.8 dist/common/utils.js: Authorization Bearer to https://api.github.com',
    secrets: [GITHUB],
  },
  {
    program: 'github-mcp-server',
    kind: 'command',
    source:
      'github/github-mcp-server README (the Go binary, `github-mcp-server stdio`); GITHUB_HOST selects an Enterprise host',
    secrets: [{ ...GITHUB, redirectedBy: ['GITHUB_HOST'] }],
  },
  {
    program: '@modelcontextprotocol/server-gitlab',
    kind: 'npm',
    source:
      '2025.4.25 dist/index.js: Authorization Bearer to GITLAB_API_URL, default https://gitlab.com/api/v4',
    secrets: [
      { variable: 'GITLAB_PERSONAL_ACCESS_TOKEN', hosts: ['gitlab.com'], redirectedBy: ['GITLAB_API_URL'] },
    ],
  },
  {
    program: '@modelcontextprotocol/server-slack',
    kind: 'npm',
    source: '2025.4.25 dist/index.js: Authorization Bearer to https://slack.com/api/',
    secrets: [{ variable: 'SLACK_BOT_TOKEN', hosts: ['slack.com'] }],
  },
  {
    program: '@modelcontextprotocol/server-brave-search',
    kind: 'npm',
    source: '0.6.2 dist/index.js: X-Subscription-Token to https://api.search.brave.com',
    secrets: [{ variable: 'BRAVE_API_KEY', hosts: ['api.search.brave.com'] }],
  },
  {
    program: '@brave/brave-search-mcp-server',
    kind: 'npm',
    source: '2.1.4 dist: X-Subscription-Token to https://api.search.brave.com',
    secrets: [{ variable: 'BRAVE_API_KEY', hosts: ['api.search.brave.com'] }],
  },
  {
    program: '@modelcontextprotocol/server-google-maps',
    kind: 'npm',
    source: '0.6.2 dist/index.js: key= in the query of https://maps.googleapis.com/maps/api/…',
    secrets: [{ variable: 'GOOGLE_MAPS_API_KEY', hosts: ['maps.googleapis.com'] }],
  },
  {
    program: '@notionhq/notion-mcp-server',
    kind: 'npm',
    source:
      '2.5.2 README "Using NOTION_TOKEN (recommended)": Bearer to https://api.notion.com (OPENAPI_MCP_HEADERS, a JSON of headers, stays --env)',
    secrets: [{ variable: 'NOTION_TOKEN', hosts: ['api.notion.com'] }],
  },
  {
    program: '@stripe/mcp',
    kind: 'npm',
    source:
      "0.3.3 dist/cli.js, index.js: STRIPE_SECRET_KEY as Bearer to Stripe's MCP server https://mcp.stripe.com",
    secrets: [{ variable: 'STRIPE_SECRET_KEY', hosts: ['mcp.stripe.com'] }],
  },
  {
    program: '@sentry/mcp-server',
    kind: 'npm',
    source:
      '0.39.0 dist: SENTRY_ACCESS_TOKEN as Bearer to sentry.io and its region hosts (SENTRY_ALLOWED_REGION_DOMAINS); its agent: OPENAI_API_KEY to https://api.openai.com/v1, ANTHROPIC_API_KEY to https://api.anthropic.com/v1, OPENROUTER_API_KEY to https://openrouter.ai/api/v1',
    secrets: [
      {
        variable: 'SENTRY_ACCESS_TOKEN',
        hosts: ['sentry.io', 'us.sentry.io', 'de.sentry.io'],
        redirectedBy: ['SENTRY_HOST', 'SENTRY_URL'],
      },
      OPENAI,
      { variable: 'ANTHROPIC_API_KEY', hosts: ['api.anthropic.com'] },
      { variable: 'OPENROUTER_API_KEY', hosts: ['openrouter.ai'] },
    ],
  },
  {
    program: 'linear-mcp-server',
    kind: 'npm',
    source:
      '0.1.0 build/index.js: LINEAR_API_KEY to @linear/sdk, whose API is https://api.linear.app/graphql',
    secrets: [{ variable: 'LINEAR_API_KEY', hosts: ['api.linear.app'] }],
  },
  {
    program: 'tavily-mcp',
    kind: 'npm',
    source:
      '0.2.22 build/index.js: Authorization Bearer and api_key in the JSON body to https://api.tavily.com',
    secrets: [{ variable: 'TAVILY_API_KEY', hosts: ['api.tavily.com'], body: true }],
  },
  {
    program: 'firecrawl-mcp',
    kind: 'npm',
    source:
      '3.26.0 dist/index.js: Authorization Bearer to FIRECRAWL_API_URL, default https://api.firecrawl.dev',
    secrets: [
      { variable: 'FIRECRAWL_API_KEY', hosts: ['api.firecrawl.dev'], redirectedBy: ['FIRECRAWL_API_URL'] },
    ],
  },
  {
    program: 'exa-mcp-server',
    kind: 'npm',
    source: '3.4.1 dist/stdio.cjs: x-api-key to https://api.exa.ai',
    secrets: [{ variable: 'EXA_API_KEY', hosts: ['api.exa.ai'] }],
  },
  {
    program: '@perplexity-ai/mcp-server',
    kind: 'npm',
    source: '1.2.1 dist: Authorization Bearer to PERPLEXITY_BASE_URL, default https://api.perplexity.ai',
    secrets: [
      { variable: 'PERPLEXITY_API_KEY', hosts: ['api.perplexity.ai'], redirectedBy: ['PERPLEXITY_BASE_URL'] },
    ],
  },
];

/**
 * An npm package spec as a runner takes it: `name` or `@scope/name`, then at most an exact version
 * or a dist-tag. An alias (`name@npm:other`), a URL, a path or a git spec names another package.
 */
const NPM_SPEC = /^((?:@[a-z0-9][a-z0-9._-]*\/)?[a-z0-9][a-z0-9._-]*)(?:@([A-Za-z0-9][A-Za-z0-9.+-]*))?$/;

/** The package a runner's spec names, or undefined when the spec is anything but name[@version]. */
export function npmPackageName(spec: string): string | undefined {
  return NPM_SPEC.exec(spec)?.[1];
}

/**
 * The known secrets of a program: an npm package spec (`npx -y <spec>`), or the basename of a
 * binary an entry starts directly. Matched exactly; anything else knows none.
 */
export function knownSecretsOf(program: string, kind: 'npm' | 'command'): readonly KnownSecret[] {
  const name = kind === 'npm' ? npmPackageName(program) : program;
  if (name === undefined) return [];
  return KNOWN_SERVERS.find((s) => s.kind === kind && s.program === name)?.secrets ?? [];
}

/**
 * The hosts of a variable that every known server reading it sends to the same hosts (for the
 * withheld-variable hint, which knows only the name); undefined when unknown or ambiguous.
 */
export function knownSecretHosts(variable: string): readonly string[] | undefined {
  let found: readonly string[] | undefined;
  for (const server of KNOWN_SERVERS) {
    for (const secret of server.secrets) {
      if (secret.variable !== variable) continue;
      if (found !== undefined && found.join(',') !== secret.hosts.join(',')) return undefined;
      found = secret.hosts;
    }
  }
  return found;
}

/** `--secret NAME@host[,host…][:body]` for a known secret. */
export function secretFlagFor(secret: KnownSecret): string {
  return `${secret.variable}@${secret.hosts.join(',')}${secret.body ? ':body' : ''}`;
}
