// macOS workflow: a real server through `mcp-sandbox run` on the default backend (`local`,
// which is seatbelt on macOS), its tools listed by the real SDK client (no capabilities).
// Usage: node scripts/smoke-run.mjs <path to apps/cli/dist/bin.js> <min tools> -- <server command…>
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [bin, min, sep, ...command] = process.argv.slice(2);
if (!bin || sep !== '--' || command.length === 0) {
  process.stderr.write('usage: node scripts/smoke-run.mjs <bin.js> <min tools> -- <command…>\n');
  process.exit(2);
}
const transport = new StdioClientTransport({
  command: process.execPath,
  args: [bin, 'run', '--', ...command],
  env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/' },
  stderr: 'inherit',
});
const client = new Client({ name: 'seatbelt-smoke', version: '1.0.0' }, { capabilities: {} });
await client.connect(transport);
const { tools } = await client.listTools();
await client.close();
process.stdout.write(`${command.join(' ')}: ${tools.length} tools\n`);
if (tools.length < Number(min)) process.exit(1);
