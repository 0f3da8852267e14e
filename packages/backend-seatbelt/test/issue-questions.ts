import type { Query } from '../src/sbpl/evaluate.js';
import { HOST_HOME, SESSION_ROOT } from './plans.js';

/** One question of the issue's list, with a name that says what a "yes" would give away. */
export interface Question {
  readonly name: string;
  readonly query: Query;
}

const read = (name: string, path: string): Question => ({ name, query: { op: 'file-read-data', path } });

/** The rw mount of the rw-mount plan (srt's golden mounts `notes`: the table asks it there). */
export const RW_MOUNT = `${HOST_HOME}/project`;
/** Where link questions create their name: the session home. */
export const LINK_HOME = `${SESSION_ROOT}/home`;
const link = (name: string, existing: string): Question => ({
  name,
  query: { op: 'hard-link', path: existing, newPath: `${LINK_HOME}/alias` },
});

/**
 * Everything the issue lists as reachable under srt's profile, as the kernel would be asked
 * (resolved paths: /var is /private/var). The same list is asked of srt's goldens (before) and
 * of ours (after); every answer of ours must be "deny".
 */
export const ISSUE_QUESTIONS: readonly Question[] = [
  read('the user’s SSH key', `${HOST_HOME}/.ssh/id_ed25519`),
  read('root’s home', '/private/var/root/.zsh_history'),
  read('an external volume', '/Volumes/Backup/secrets.txt'),
  read('Homebrew’s Postgres data (Apple silicon)', '/opt/homebrew/var/postgres/base/1/1259'),
  read('Homebrew’s configs (Apple silicon)', '/opt/homebrew/etc/redis.conf'),
  read('Homebrew’s data (Intel)', '/usr/local/var/mysql/ibdata1'),
  read('Homebrew’s configs (Intel)', '/usr/local/etc/my.cnf'),
  read('/private/var/tmp (denied on Linux)', '/private/var/tmp/build.log'),
  read('another tmp file', '/private/tmp/other-session/token'),
  read('another app’s temp dir', '/private/var/folders/xy/T/com.apple.Safari/cache.db'),
  read('/Library/Application Support', '/Library/Application Support/com.example/db.sqlite'),
  read('/Library/Managed Preferences', '/Library/Managed Preferences/alice/com.corp.vpn.plist'),
  read('/Library/Keychains', '/Library/Keychains/System.keychain'),
  read('/private/var/log', '/private/var/log/system.log'),
  read('/Library/Logs', '/Library/Logs/DiagnosticReports/app.ips'),
  read('/cores', '/cores/core.1234'),
  read('/Network', '/Network/Servers/share/file'),
  read('/nix', '/nix/store/abc-secret/config'),
  read('firmlink spelling of the SSH key', `/System/Volumes/Data${HOST_HOME}/.ssh/id_ed25519`),
  read('firmlink spelling of Homebrew’s etc', '/System/Volumes/Data/opt/homebrew/etc/redis.conf'),
  read('firmlink spelling of /Library/Keychains', '/System/Volumes/Data/Library/Keychains/System.keychain'),
  read('firmlink spelling of /private/var/log', '/System/Volumes/Data/private/var/log/system.log'),
  read('another terminal (ttys)', '/dev/ttys001'),
  read('another terminal (pty)', '/dev/ptyp0'),
  read('a packet filter', '/dev/bpf0'),
  read('a raw disk', '/dev/rdisk0'),
  read('a disk', '/dev/disk1s1'),
  {
    name: 'write to the user’s shell startup',
    query: { op: 'file-write-data', path: `${HOST_HOME}/.zshrc` },
  },
  { name: 'hard link to the SSH key', query: { op: 'file-link', path: `${HOST_HOME}/.ssh/id_ed25519` } },
  link('hard link of the SSH key into the session home', `${HOST_HOME}/.ssh/id_ed25519`),
  link(
    'hard link of the runtime into the session home (writes through)',
    '/usr/local/Cellar/node@22/22.12.0/bin/node',
  ),
  link('hard link of a rw mount’s git hook into the session home', `${RW_MOUNT}/.git/hooks/pre-commit`),
  {
    name: 'move a rw mount’s .git away (to edit its hooks and move it back)',
    query: { op: 'file-write-unlink', path: `${RW_MOUNT}/.git` },
  },
  {
    name: 'make a .git in a rw mount (a prepared directory renamed there)',
    query: { op: 'file-write-create', path: `${RW_MOUNT}/vendor/lib/.git` },
  },
  {
    name: 'make a .claude in a rw mount (agent commands of its choice)',
    query: { op: 'file-write-create', path: `${RW_MOUNT}/.claude` },
  },
  ...[
    'com.apple.coreservices.launchservicesd',
    'com.apple.lsd.mapdb',
    'com.apple.lsd.modifydb',
    'com.apple.SecurityServer',
    'com.apple.securityd.xpc',
    'com.apple.distributed_notifications@Uv3',
    'com.apple.pasteboard.1',
    'com.apple.windowserver.active',
  ].map((name) => ({ name: `mach-lookup ${name}`, query: { op: 'mach-lookup', name } })),
  { name: 'open an app (lsopen)', query: { op: 'lsopen' } },
  { name: 'send Apple events', query: { op: 'appleevent-send' } },
  { name: 'post a distributed notification', query: { op: 'distributed-notification-post' } },
  { name: 'read IOKit properties', query: { op: 'iokit-get-properties' } },
  { name: 'list every process (kern.proc.all)', query: { op: 'sysctl-read', name: 'kern.proc.all' } },
  { name: 'another process’s info (kern.proc.pid.1)', query: { op: 'sysctl-read', name: 'kern.proc.pid.1' } },
  { name: 'any POSIX shared memory', query: { op: 'ipc-posix-shm-read-data', name: 'com.example.app.shm' } },
  {
    name: 'write POSIX shared memory',
    query: { op: 'ipc-posix-shm-write-data', name: 'apple.shm.notification_center' },
  },
  { name: 'a host address directly', query: { op: 'network-outbound', remote: '93.184.215.14:443' } },
  { name: 'a loopback service', query: { op: 'network-outbound', remote: 'localhost:5432' } },
];
