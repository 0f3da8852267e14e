import { runConformanceSuite } from '@mcpsandbox/core/conformance';
import { createLocalBackend } from '../src/index.js';

// The conformance suite with its probe written in Python (Debian's python3, no packages): the
// process a `uvx` server is. Python buffers stdout, restores SIGPIPE and handles SIGTERM its own
// way; the backend's streams, exit statuses, kills and environment must not care.
const PYTHON_PROBE = String.raw`
import json, os, signal, sys, time

mode = sys.argv[1] if len(sys.argv) > 1 else ""
arg = sys.argv[2] if len(sys.argv) > 2 else ""

def write(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]

if mode == "echo":
    while True:
        chunk = os.read(0, 65536)
        if not chunk:
            break
        write(1, chunk)
elif mode == "exit":
    write(1, b"bye\n")
    sys.exit(int(arg))
elif mode == "stderr":
    write(2, arg.encode())
    write(1, b"out")
elif mode == "env":
    write(1, (json.dumps(dict(os.environ)) + "\n").encode())
elif mode in ("sleep", "hang"):
    if mode == "hang":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    write(1, b"ready\n")
    while True:
        time.sleep(1)
elif mode == "big":
    left = int(arg)
    block = b"x" * 65536
    while left > 0:
        size = min(left, len(block))
        write(1, block[:size])
        left -= size
    write(1, b"\n")
else:
    write(2, ("unknown probe mode " + mode + "\n").encode())
    sys.exit(64)
`;

runConformanceSuite({
  name: 'local, a Python process',
  createBackend: () => createLocalBackend(),
  probe: (args) => ['/usr/bin/python3', '-c', PYTHON_PROBE, ...args],
});
