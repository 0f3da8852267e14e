// A server that keeps sending: after the first request (answered with an empty result), 64 KiB
// notifications as fast as its stdout takes them, honouring backpressure, until stdin ends.
// For checking that a bridge whose client stops reading stays bounded.
const payload = 'x'.repeat(64 * 1024);
const line = Buffer.from(
  `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"${payload}"}}\n`,
);

let ended = false;
let flooding = false;
let pending = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (text) => {
  pending += text;
  let nl = pending.indexOf('\n');
  while (nl !== -1) {
    const request = pending.slice(0, nl);
    pending = pending.slice(nl + 1);
    nl = pending.indexOf('\n');
    let message;
    try {
      message = JSON.parse(request);
    } catch {
      continue;
    }
    if (message.id === undefined) continue;
    process.stdout.write(`{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":{}}\n`);
    if (!flooding) {
      flooding = true;
      setImmediate(pump);
    }
  }
});
process.stdin.on('end', () => {
  ended = true;
  process.exit(0);
});

function pump() {
  // A few lines per turn, so stdin EOF is seen even if stdout never refuses a write.
  for (let i = 0; i < 16 && !ended; i++) {
    if (!process.stdout.write(line)) {
      process.stdout.once('drain', pump);
      return;
    }
  }
  if (!ended) setImmediate(pump);
}
