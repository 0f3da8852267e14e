/**
 * Attacks on what the system-call filter lets through, each run by a hostile server through the
 * built binary, under `local` (must fail) and under `none` (the control: the same code succeeds).
 * perl is in every Debian-like base system and in the sandbox's read-only view of it.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTempDir, startBridge, waitUntil } from './binary.js';

let dir: string;
beforeAll(() => {
  dir = openTempDir('mcpsandbox-filter-');
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Runs a hostile perl "server" through the binary until it says done; returns the bridge's stderr. */
async function hostile(backend: 'local' | 'none', extraArgs: string[], script: string, args: string[]) {
  const bridge = startBridge(['--backend', backend, ...extraArgs, '--', 'perl', '-e', script, ...args]);
  await waitUntil(() => bridge.stderr().includes('hostile:done'), `the hostile code under ${backend}`);
  bridge.child.stdin.end();
  await bridge.exit;
  return bridge.stderr();
}

// Finding 3: a datagram socketpair end can sendto() or connect() to any datagram socket path
// the sandbox sees. Fails before the allowlist: socketpair(AF_UNIX, SOCK_DGRAM) was allowed.
const DGRAM = String.raw`
use Socket;
my ($path, $marker) = @ARGV;
if (socketpair(my $a, my $b, AF_UNIX, SOCK_DGRAM, 0)) {
  print STDERR (send($a, "$marker-sendto", 0, pack_sockaddr_un($path)) ? "sendto:ok\n" : "sendto:$!\n");
  print STDERR (connect($b, pack_sockaddr_un($path)) && send($b, "$marker-connect", 0) ? "connect:ok\n" : "connect:$!\n");
} else {
  print STDERR "socketpair:$!\n";
}
print STDERR (socket(my $c, AF_UNIX, SOCK_DGRAM, 0) ? "socket:ok\n" : "socket:$!\n");
print STDERR "hostile:done\n";
sleep 60;
`;

// A host service on a datagram unix socket (journald, /dev/log, a notify socket).
const RECEIVER = String.raw`
use Socket;
$| = 1;
socket(my $s, AF_UNIX, SOCK_DGRAM, 0) or die "socket: $!";
bind($s, pack_sockaddr_un($ARGV[0])) or die "bind: $!";
chmod 0777, $ARGV[0];
print "ready\n";
while (defined recv($s, my $message, 4096, 0)) { print "got:$message\n" }
`;

function startReceiver(path: string): { child: ChildProcessWithoutNullStreams; output: () => string } {
  const child = spawn('perl', ['-e', RECEIVER, path], { stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  return { child, output: () => output };
}

// Finding 7: a setuid binary planted through an rw mount keeps its bit on the host. Fails before
// the filter checked the mode argument of chmod, fchmod, fchmodat and open(O_CREAT).
const SETUID = String.raw`
use Fcntl;
my ($dir) = @ARGV;
open(my $f, '>', "$dir/chmod") or die "open: $!"; close $f;
print STDERR (chmod(04755, "$dir/chmod") ? "chmod:ok\n" : "chmod:$!\n");
open(my $g, '>', "$dir/fchmod") or die "open: $!";
print STDERR (chmod(02755, $g) ? "fchmod:ok\n" : "fchmod:$!\n");
print STDERR (sysopen(my $h, "$dir/creat", O_WRONLY | O_CREAT | O_EXCL, 04755) ? "creat:ok\n" : "creat:$!\n");
open(my $i, '>', "$dir/plain") or die "open: $!"; close $i;
print STDERR (chmod(0755, "$dir/plain") ? "plain:ok\n" : "plain:$!\n");
print STDERR "hostile:done\n";
sleep 60;
`;

describe('the filter under attack, through the binary', () => {
  it('refuses datagram unix sockets: a host datagram socket in a mount hears nothing', {
    timeout: 30_000,
  }, async () => {
    const socketDir = mkdtempSync(join(dir, 'sock-'));
    chmodSync(socketDir, 0o755);
    const path = join(socketDir, 'dgram.sock');
    const receiver = startReceiver(path);
    try {
      await waitUntil(() => receiver.output().includes('ready'), 'the host datagram socket');
      const local = await hostile('local', ['--mount', `${socketDir}:/mnt/sock`], DGRAM, [
        '/mnt/sock/dgram.sock',
        'from-local',
      ]);
      expect(local).toMatch(/socketpair:Operation not permitted/);
      expect(local).toMatch(/socket:Operation not permitted/);
      // Control: the same code without the sandbox reaches the socket both ways.
      const none = await hostile('none', [], DGRAM, [path, 'from-none']);
      expect(none).toContain('sendto:ok');
      await waitUntil(() => receiver.output().includes('got:from-none-connect'), 'the control message');
      expect(receiver.output()).toContain('got:from-none-sendto');
      expect(receiver.output()).not.toContain('from-local');
    } finally {
      receiver.child.kill('SIGKILL');
    }
  });

  it('refuses setuid and setgid bits on an rw mount', { timeout: 30_000 }, async () => {
    const local = mkdtempSync(join(dir, 'rw-local-'));
    const none = mkdtempSync(join(dir, 'rw-none-'));
    // Writable by the sandbox's uid (nobody when the tests run as root).
    chmodSync(local, 0o777);
    const modes = (where: string) =>
      Object.fromEntries(readdirSync(where).map((name) => [name, statSync(join(where, name)).mode & 0o7777]));

    const inside = await hostile('local', ['--mount', `${local}:/mnt/rw:rw`], SETUID, ['/mnt/rw']);
    expect(inside).toContain('chmod:Operation not permitted');
    expect(inside).toContain('fchmod:Operation not permitted');
    expect(inside).toContain('creat:Operation not permitted');
    expect(inside).toContain('plain:ok');
    // The hostile code ran and wrote there; no file it left has a set-id bit.
    expect(existsSync(join(local, 'plain'))).toBe(true);
    expect(modes(local).plain).toBe(0o755);
    for (const [name, mode] of Object.entries(modes(local))) {
      expect(mode & 0o6000, `${name}: ${mode.toString(8)}`).toBe(0);
    }

    // Control: the same code without the sandbox sets them.
    await hostile('none', [], SETUID, [none]);
    expect(modes(none)).toMatchObject({ chmod: 0o4755, fchmod: 0o2755, creat: 0o4755, plain: 0o755 });
  });
});
