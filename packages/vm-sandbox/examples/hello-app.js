// A JavaScript MCP app for the `vm` backend:
//   mcp-sandbox run --backend vm --env GREETING -- ./hello-app.js
// It runs inside a hardened node:vm context; the MCP protocol runs outside it. The app sees
// `mcp` (register tools, resources, prompts; read granted env), `console` (to stderr) and timers.

mcp.tool(
  'hello',
  'Greets someone by name',
  { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  async ({ name }) => `${mcp.env.GREETING ?? 'Hello'}, ${name}!`,
);

mcp.tool(
  'add',
  'Adds two numbers',
  { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
  ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] }),
);

mcp.tool('fail', 'Always throws', { type: 'object' }, () => {
  throw new Error('this tool always fails');
});

mcp.resource(
  'hello://readme',
  'readme',
  'About this app',
  () => 'This app runs in a node:vm sandbox.',
  'text/plain',
);

mcp.prompt(
  'greet',
  'A greeting prompt',
  [{ name: 'name', required: true }],
  ({ name }) => `Say hello to ${name}.`,
);

console.log('hello-app: registered 3 tools, 1 resource, 1 prompt');
