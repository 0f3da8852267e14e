/** The attacks of the promise suite, as the programs a hostile server runs inside the sandbox. */

/**
 * Plants set-id files and file capabilities in the directory `argv[1]` every way the kernel
 * offers (chmod, fchmod, open and mknod with the bits, a setgid world-writable directory,
 * `setcap` and a raw `security.capability` write), and writes one plain executable as the
 * control. Prints what each call said, as JSON.
 */
export const SETID_ATTACK = `
import json, os, shutil, subprocess, sys
d = sys.argv[1]
out = {}
def attempt(name, fn):
    try:
        fn()
        out[name] = 'ok'
    except Exception as e:
        out[name] = type(e).__name__ + ':' + str(e)
def copy(name):
    shutil.copyfile('/usr/bin/id', os.path.join(d, name))
    os.chmod(os.path.join(d, name), 0o755)
    return os.path.join(d, name)
attempt('plain', lambda: copy('plain'))
attempt('chmod-setuid', lambda: os.chmod(copy('chmod-setuid'), 0o4755))
attempt('chmod-setgid', lambda: os.chmod(copy('chmod-setgid'), 0o2755))
def fchmod():
    fd = os.open(copy('fchmod-setuid'), os.O_RDONLY)
    try: os.fchmod(fd, 0o6755)
    finally: os.close(fd)
attempt('fchmod-setuid', fchmod)
attempt('creat-setuid', lambda: os.close(os.open(os.path.join(d, 'creat-setuid'), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o4755)))
attempt('mknod-setuid', lambda: os.mknod(os.path.join(d, 'mknod-setuid'), 0o104755))
def setgid_dir():
    p = os.path.join(d, 'setgid-dir')
    os.mkdir(p, 0o777)
    os.chmod(p, 0o2777)
attempt('setgid-dir', setgid_dir)
def setcap():
    r = subprocess.run(['/usr/sbin/setcap', 'cap_setuid+ep', copy('setcap')], capture_output=True, text=True)
    if r.returncode != 0: raise OSError(r.stderr.strip())
attempt('setcap', setcap)
# struct vfs_cap_data v2: magic|effective, then permitted/inheritable pairs; CAP_SETUID is bit 7.
attempt('xattr-capability', lambda: os.setxattr(copy('xattr-capability'), 'security.capability', bytes.fromhex('0100000280000000000000000000000000000000')))
print(json.dumps(out))
`;

/**
 * On the host: every entry below `argv[1]` (links not followed) with its mode and whether it
 * carries a `security.capability` attribute, as JSON.
 */
export const HOST_TREE = `
import json, os, stat, sys
out = []
for root, dirs, files in os.walk(sys.argv[1]):
    for name in dirs + files:
        p = os.path.join(root, name)
        st = os.lstat(p)
        caps = False
        if not stat.S_ISLNK(st.st_mode):
            try:
                os.getxattr(p, 'security.capability', follow_symlinks=False)
                caps = True
            except OSError:
                pass
        out.append({'path': p, 'mode': st.st_mode, 'caps': caps})
print(json.dumps(out))
`;

/** Node code that prints who the process is: its ids, capability sets and no_new_privs. */
export const IDENTITY_PROBE = `
const status = require('fs').readFileSync('/proc/self/status', 'utf8');
const field = (name) => (status.match(new RegExp('^' + name + ':\\\\s*(.*)$', 'm')) || [])[1];
console.log(JSON.stringify({
  uid: field('Uid'), gid: field('Gid'), groups: field('Groups'),
  capEff: field('CapEff'), capPrm: field('CapPrm'), capInh: field('CapInh'), capAmb: field('CapAmb'),
  noNewPrivs: field('NoNewPrivs'),
}));
`;

/** Node code that reads each path in argv and prints what happened, as JSON. */
export const READ_PROBE = `
const fs = require('fs');
const out = {};
for (const path of process.argv.slice(1)) {
  try { out[path] = 'read:' + fs.readFileSync(path, 'utf8'); } catch (e) { out[path] = 'refused:' + e.code; }
}
console.log(JSON.stringify(out));
`;

/**
 * A server that leaves a daemon behind (its own session, stdio closed) with a marker in its
 * command line, says so on stderr and then waits.
 */
export const DAEMON_SERVER = `
const { spawn } = require('child_process');
const marker = process.argv[1];
spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', marker], { detached: true, stdio: 'ignore' }).unref();
process.stderr.write('promise-suite: daemon started\\n');
setInterval(() => {}, 1000);
`;
