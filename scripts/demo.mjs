// The main job, end to end: the real MCP SDK client starts `mcp-sandbox run -- <server>` exactly as
// Claude Code or Cursor would, and lists the server's tools through the sandbox.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const require = createRequire(import.meta.url);
const bin = fileURLToPath(new URL('../apps/cli/dist/bin.js', import.meta.url));
const server = require.resolve('@modelcontextprotocol/server-everything/dist/index.js');
const repo = fileURLToPath(new URL('..', import.meta.url));
const runArgs = process.argv.slice(2);

// The server's files are granted read-only: the sandbox shows nothing else of this machine.
const args = [bin, 'run', '--mount', `${repo}:ro`, ...runArgs, '--', 'node', server, 'stdio'];
console.error(`$ mcp-sandbox run --mount ${repo}:ro ${runArgs.join(' ')} -- node ${server} stdio`);
const transport = new StdioClientTransport({ command: process.execPath, args, stderr: 'inherit' });
const client = new Client({ name: 'mcp-sandbox-demo', version: '1.0.0' }, { capabilities: {} });
await client.connect(transport);
const info = client.getServerVersion();
const { tools } = await client.listTools();
console.log(`\n${info?.name} ${info?.version}: ${tools.length} tools, served from inside the sandbox\n`);
for (const tool of tools)
  console.log(`  ${tool.name.padEnd(32)} ${(tool.description ?? '').split('\n')[0]?.slice(0, 70)}`);
const echo = await client.callTool({ name: 'echo', arguments: { message: 'hello from the host' } });
console.log(`\ncalled echo: ${echo.content?.[0]?.text}`);
await client.close();
