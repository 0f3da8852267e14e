// `mcp-sandbox run --backend srt -- npx -y @modelcontextprotocol/server-everything`, its tools
// listed by the real SDK client (capabilities pinned to none). For the macOS workflow, where
// the Linux end-to-end files do not run. Usage: node test/smoke-everything.mjs <path to bin.js>
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const bin = process.argv[2];
if (!bin) {
  process.stderr.write('usage: node test/smoke-everything.mjs <path to apps/cli/dist/bin.js>\n');
  process.exit(2);
}
const transport = new StdioClientTransport({
  command: process.execPath,
  args: [
    bin,
    'run',
    '--backend',
    'srt',
    '--',
    'npx',
    '-y',
    '@modelcontextprotocol/server-everything@2026.8.31',
  ],
  env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/' },
  stderr: 'inherit',
});
const client = new Client({ name: 'srt-smoke', version: '1.0.0' }, { capabilities: {} });
await client.connect(transport);
const { tools } = await client.listTools();
await client.close();
process.stdout.write(`${tools.length} tools: ${tools.map((tool) => tool.name).join(', ')}\n`);
if (tools.length !== 13) {
  process.stderr.write(`expected 13 tools from server-everything, got ${tools.length}\n`);
  process.exit(1);
}
