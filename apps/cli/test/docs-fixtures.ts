import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

/** What a docs block's fixture may touch: the block's working directory and temporary home. */
export interface FixtureContext {
  readonly cwd: string;
  readonly home: string;
  readonly env: Record<string, string>;
  /** The `mcp-sandbox` the blocks run. */
  readonly bin: string;
}

type Fixture = (ctx: FixtureContext) => Promise<void>;

/** A session of the real SDK client through `mcp-sandbox run <args>`. */
async function session<T>(
  ctx: FixtureContext,
  args: string[],
  body: (client: Client) => Promise<T>,
): Promise<T> {
  const transport = new StdioClientTransport({
    command: ctx.bin,
    args: ['run', ...args],
    env: ctx.env,
    cwd: ctx.cwd,
  });
  const client = new Client({ name: 'docs-test', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  try {
    return await body(client);
  } finally {
    await client.close();
  }
}

const CURSOR_PROJECT = `{
  // servers for this project
  "mcpServers": {
    "github": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_example" }
    },
    "docs": { "url": "https://example.com/mcp" }
  }
}
`;

const MEMORY = ['--state', 'memory', '--', 'npx', '-y', '@modelcontextprotocol/server-memory'];

/**
 * Named set-ups a block asks for with `<!-- docs-test: <name> -->`: the state the docs describe
 * in words just before the block.
 */
export const DOC_FIXTURES: Readonly<Record<string, Fixture>> = {
  /** A project's .cursor/mcp.json with a GitHub server and a remote one. */
  'cursor-project': async (ctx) => {
    mkdirSync(join(ctx.cwd, '.cursor'), { recursive: true });
    writeFileSync(join(ctx.cwd, '.cursor/mcp.json'), CURSOR_PROJECT);
  },
  /** session.jsonl: a client lists tools and calls echo once through `run --trace`. */
  'trace-session': async (ctx) => {
    await session(
      ctx,
      ['--trace', 'session.jsonl', '--', 'npx', '-y', '@modelcontextprotocol/server-everything'],
      async (client) => {
        await client.listTools();
        await client.callTool({ name: 'echo', arguments: { message: 'hello' } });
      },
    );
  },
  /**
   * egress.jsonl: a server (the project's own script) granted api.example.invalid fetches it; the
   * name resolves nowhere, so the tool says `fetch failed` and the trace says why.
   */
  'trace-egress': async (ctx) => {
    copyFileSync(new URL('./fixtures/fetch-server.mjs', import.meta.url), join(ctx.cwd, 'fetch-server.mjs'));
    const args = [
      '--allow-net',
      'api.example.invalid',
      '--trace',
      'egress.jsonl',
      '--',
      'node',
      join(ctx.cwd, 'fetch-server.mjs'),
    ];
    const result = await session(ctx, args, (client) =>
      client.callTool({ name: 'fetch', arguments: { url: 'https://api.example.invalid/v1' } }),
    );
    if (!JSON.stringify(result).includes('fetch failed')) {
      throw new Error(`a fetch of an unresolvable granted host did not fail: ${JSON.stringify(result)}`);
    }
  },
  /** A server-memory session under --state memory stores an entity; a second session finds it. */
  'memory-session': async (ctx) => {
    await session(ctx, MEMORY, (client) =>
      client.callTool({
        name: 'create_entities',
        arguments: {
          entities: [{ name: 'ada', entityType: 'person', observations: ['wrote the first program'] }],
        },
      }),
    );
    const graph = await session(ctx, MEMORY, (client) =>
      client.callTool({ name: 'read_graph', arguments: {} }),
    );
    if (!JSON.stringify(graph).includes('wrote the first program')) {
      throw new Error(`--state memory did not keep the entity across sessions: ${JSON.stringify(graph)}`);
    }
  },
  /** ~/notes, a folder of the user's with one file. */
  notes: async (ctx) => {
    mkdirSync(join(ctx.home, 'notes'), { recursive: true });
    writeFileSync(join(ctx.home, 'notes/todo.md'), '- sandbox every server\n');
  },
};
