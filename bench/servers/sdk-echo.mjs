// One `echo` tool on the MCP SDK, the same code two ways: over stdio (what `serve` and supergateway
// wrap), or with `--http <port>` served directly by the SDK's own Streamable HTTP server (the
// bench's "direct" target). `--era 2025` is the v1 SDK (`@modelcontextprotocol/sdk`: `Server`,
// `StdioServerTransport`, `StreamableHTTPServerTransport` with a session per client); `--era 2026`
// is the v2 SDK (`@modelcontextprotocol/server`: `serveStdio`, `createMcpHandler`), which speaks
// 2026-07-28. Low-level servers without schemas, so each call costs the SDK's own work only.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: { era: { type: 'string', default: '2025' }, http: { type: 'string' } },
});
const ECHO_TOOL = {
  name: 'echo',
  description: 'Echoes its text',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
};
const echo = (args) => ({ content: [{ type: 'text', text: `echo: ${args?.text ?? ''}` }] });

async function v1Server() {
  const { Server } = await import('@modelcontextprotocol/sdk/server/index.js');
  const { CallToolRequestSchema, ListToolsRequestSchema } = await import(
    '@modelcontextprotocol/sdk/types.js'
  );
  return () => {
    const server = new Server({ name: 'bench-echo', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [ECHO_TOOL] }));
    server.setRequestHandler(CallToolRequestSchema, async (request) => echo(request.params.arguments));
    return server;
  };
}

async function v2Server() {
  const { Server, SUPPORTED_PROTOCOL_VERSIONS } = await import('@modelcontextprotocol/server');
  return () => {
    const server = new Server(
      { name: 'bench-echo', version: '1.0.0' },
      {
        capabilities: { tools: {} },
        supportedProtocolVersions: ['2026-07-28', ...SUPPORTED_PROTOCOL_VERSIONS],
      },
    );
    server.setRequestHandler('tools/list', async () => ({ tools: [ECHO_TOOL] }));
    server.setRequestHandler('tools/call', async (request) => echo(request.params.arguments));
    return server;
  };
}

/** The v1 SDK's stateful pattern: a transport and a server per session, found by Mcp-Session-Id. */
async function v1Http(build) {
  const { StreamableHTTPServerTransport } = await import(
    '@modelcontextprotocol/sdk/server/streamableHttp.js'
  );
  const sessions = new Map();
  return async (req, res) => {
    const id = req.headers['mcp-session-id'];
    let transport = typeof id === 'string' ? sessions.get(id) : undefined;
    if (transport === undefined) {
      if (id !== undefined) {
        res.writeHead(404).end();
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => sessions.set(sid, transport),
      });
      transport.onclose = () => sessions.delete(transport.sessionId);
      await build().connect(transport);
    }
    await transport.handleRequest(req, res);
  };
}

/** The v2 SDK's handler (a fetch-style Request → Response), adapted to node:http. */
async function v2Http(build) {
  const { createMcpHandler } = await import('@modelcontextprotocol/server');
  const handler = createMcpHandler(build, { legacy: 'stateless' });
  return async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const hasBody = !['GET', 'HEAD'].includes(req.method ?? 'GET');
    const response = await handler.fetch(
      new Request(`http://${req.headers.host}${req.url}`, {
        method: req.method,
        headers: Object.entries(req.headers).flatMap(([k, v]) =>
          Array.isArray(v) ? v.map((x) => [k, x]) : [[k, v]],
        ),
        body: hasBody ? Buffer.concat(chunks) : undefined,
      }),
    );
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) for await (const chunk of response.body) res.write(chunk);
    res.end();
  };
}

const modern = values.era === '2026';
if (!['2025', '2026'].includes(values.era)) throw new Error(`--era must be 2025 or 2026, not ${values.era}`);
const build = modern ? await v2Server() : await v1Server();
if (values.http !== undefined) {
  const handle = modern ? await v2Http(build) : await v1Http(build);
  const server = createServer((req, res) => {
    handle(req, res).catch((error) => {
      process.stderr.write(`bench-echo: ${error.message}\n`);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  server.listen(Number(values.http), '127.0.0.1', () => {
    process.stderr.write(`listening on http://127.0.0.1:${server.address().port}/mcp\n`);
  });
} else if (modern) {
  const { serveStdio } = await import('@modelcontextprotocol/server/stdio');
  serveStdio(build, { legacy: 'serve' });
} else {
  const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
  await build().connect(new StdioServerTransport());
}
