// The bench's trivial server as a JavaScript MCP app for the `vm` backend (which runs apps, not
// executables): the fake server's `echo` and `big` tools.
//   mcp-sandbox run --backend vm -- bench/servers/vm-app.js

mcp.tool(
  'echo',
  'Returns its text argument.',
  { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  ({ text }) => text,
);

mcp.tool(
  'big',
  'Returns a text of the given number of bytes.',
  { type: 'object', properties: { bytes: { type: 'integer', minimum: 0 } }, required: ['bytes'] },
  ({ bytes }) => 'x'.repeat(bytes),
);

mcp.tool(
  'add',
  'Adds two numbers.',
  { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
  ({ a, b }) => String(a + b),
);
