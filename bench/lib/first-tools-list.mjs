// One start of a stdio MCP server: initialize, then tools/list; the tool names and the time from
// spawn to the tools/list answer. Shared by the surveys of popular servers.
import { spawn } from 'node:child_process';

const INIT = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"survey","version":"1"}}}\n`;
const INITIALIZED = `{"jsonrpc":"2.0","method":"notifications/initialized"}\n`;
const LIST = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n`;

/** Resolves with `{ tools: string[], ms }` or `{ error }`, and the tail of stderr. */
export function firstToolsList(argv, { env, cwd, timeoutMs }) {
  return new Promise((done) => {
    const started = process.hrtime.bigint();
    const child = spawn(argv[0], argv.slice(1), { env, cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    let buffer = '';
    let stderr = '';
    let finished = false;
    const finish = (result) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 3000).unref();
      done({ ...result, stderr: stderr.slice(-1200) });
    };
    const timer = setTimeout(() => finish({ error: 'timeout' }), timeoutMs);
    child.stderr.on('data', (chunk) => {
      stderr = (stderr + chunk).slice(-8000);
    });
    child.on('error', (error) => finish({ error: error.message }));
    child.on('exit', (code) => finish({ error: `exited ${code}` }));
    child.stdin.on('error', () => undefined);
    child.stdout.on('data', (chunk) => {
      buffer += chunk;
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        let message;
        try {
          message = JSON.parse(line);
        } catch {
          continue;
        }
        if (message.id === 1) child.stdin.write(INITIALIZED + LIST);
        if (message.id === 2) {
          const ms = Number(process.hrtime.bigint() - started) / 1e6;
          const tools = message.result?.tools;
          finish(
            Array.isArray(tools) ? { tools: tools.map((t) => t.name), ms } : { error: 'tools/list failed' },
          );
        }
      }
    });
    child.stdin.write(INIT);
  });
}
