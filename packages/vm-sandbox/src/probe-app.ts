/**
 * The conformance probe as a sandboxed app: the same modes as the core probe (echo, exit N,
 * stderr TEXT, env, sleep, hang, big N), written against the raw `io` API and run inside the vm
 * like any app. `exec([VM_PROBE_COMMAND, ...args])` runs it.
 */
export const VM_PROBE_COMMAND = 'mcp-sandbox-vm-probe';

export const PROBE_APP_SOURCE = String.raw`
const [mode, arg] = io.argv;
switch (mode) {
  case 'echo':
    io.onData((chunk) => { io.write(chunk); });
    break;
  case 'exit':
    await io.write('bye\n');
    io.exit(Number(arg));
    break;
  case 'stderr':
    await io.writeErr(arg);
    await io.write('out');
    break;
  case 'env':
    await io.write(JSON.stringify(io.env) + '\n');
    break;
  case 'sleep':
    setInterval(() => {}, 1000);
    await io.write('ready\n');
    break;
  case 'hang':
    io.onSignal('SIGTERM', () => {});
    setInterval(() => {}, 1000);
    await io.write('ready\n');
    break;
  case 'big': {
    const block = 'x'.repeat(65536);
    let left = Number(arg);
    while (left > 0) {
      const size = Math.min(left, block.length);
      left -= size;
      await io.write(size === block.length ? block : block.slice(0, size));
    }
    await io.write('\n');
    break;
  }
  default:
    await io.writeErr('unknown probe mode ' + mode + '\n');
    io.exit(64);
}
`;

/** A core `ProbeCommand` for the conformance suite. */
export const vmProbe = (args: readonly string[]): string[] => [VM_PROBE_COMMAND, ...args];
