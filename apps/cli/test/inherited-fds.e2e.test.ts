import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { BIN } from './helpers.js';

// A client (or whatever starts the client) may leave a descriptor open in mcp-sandbox's process
// without close-on-exec: past Node's start-up check (fds up to the first gap above 15) it reached
// the sandbox, where a directory or socket of the host's is a way out.
describe('descriptors the bridge inherits', () => {
  it('do not reach the sandbox', async () => {
    const LEAKED = 40;
    const stdio: Array<'pipe' | 'ignore'> = Array.from({ length: LEAKED + 1 }, (_, i) =>
      i <= 2 || i === LEAKED ? 'pipe' : 'ignore',
    );
    const child = spawn(process.execPath, [BIN, 'run', '--', 'sh', '-c', 'ls /proc/self/fd >&2; sleep 1'], {
      stdio,
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const [code] = (await once(child, 'close')) as [number | null];
    expect(code).toBe(0);
    // The sandbox's stderr lines come with a `[sandbox] ` prefix.
    const inside = stderr
      .split('\n')
      .map((line) => /^(?:\[sandbox\] )?(\d+)$/.exec(line.trim())?.[1])
      .filter((fd) => fd !== undefined)
      .map(Number);
    expect(inside).toContain(2);
    expect(inside).not.toContain(LEAKED);
    expect(Math.max(...inside)).toBeLessThan(10);
  });
});
