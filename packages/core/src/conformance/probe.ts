/**
 * The program every conformance case runs. It is plain Node.js so that any backend able to run
 * `node` can run it from `node -e`; a backend without processes (the fake) implements the same
 * modes natively. Modes: echo | exit N | stderr TEXT | env | sleep | hang | big N.
 */
export const PROBE_SOURCE = String.raw`
const [mode, arg] = process.argv.slice(1);
const out = (s, cb) => process.stdout.write(s, cb);
switch (mode) {
  case 'echo':
    process.stdin.pipe(process.stdout);
    process.stdin.on('end', () => process.stdout.end());
    break;
  case 'exit':
    out('bye\n', () => process.exit(Number(arg)));
    break;
  case 'stderr':
    process.stderr.write(arg);
    out('out');
    break;
  case 'env':
    out(JSON.stringify(process.env) + '\n');
    break;
  case 'sleep':
    setInterval(() => {}, 1000);
    out('ready\n');
    break;
  case 'hang':
    process.on('SIGTERM', () => {});
    setInterval(() => {}, 1000);
    out('ready\n');
    break;
  case 'big': {
    const n = Number(arg);
    const block = Buffer.alloc(65536, 120);
    let left = n;
    const pump = () => {
      while (left > 0) {
        const size = Math.min(left, block.length);
        left -= size;
        if (!process.stdout.write(size === block.length ? block : block.subarray(0, size))) {
          process.stdout.once('drain', pump);
          return;
        }
      }
      process.stdout.write('\n');
    };
    pump();
    break;
  }
  default:
    process.stderr.write('unknown probe mode ' + mode + '\n');
    process.exit(64);
}
`;

export type ProbeCommand = (args: readonly string[]) => string[];

export const nodeProbe: ProbeCommand = (args) => ['node', '-e', PROBE_SOURCE, ...args];
