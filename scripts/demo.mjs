// The main job, end to end: the real MCP SDK client starts `mcp-sandbox run -- <server>` exactly as
// Claude Code or Cursor would, and lists the server's tools through the sandbox.
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const bin = fileURLToPath(new URL('../apps/cli/dist/bin.js', import.meta.url));
const runArgs = process.argv.slice(2);
// Straight from the registry, as users start servers: installed inside the sandbox on first use
// (egress limited to the registry), then run with no network at all.
const server = ['npx', '-y', '@modelcontextprotocol/server-everything@2026.8.31'];

const args = [bin, 'run', ...runArgs, '--', ...server];
console.error(`$ mcp-sandbox run ${[...runArgs, '--', ...server].join(' ')}`);
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
