/** With egress: the sandbox's own resolver files and, as in the outer layer, its own uid. */
import type { LocalHostInfo } from '../probe.js';

export function resolverArgs(
  files: { readonly resolv: string; readonly hosts: string; readonly nsswitch: string },
  info: LocalHostInfo,
): string[] {
  const uid = info.runAs?.uid ?? process.getuid?.() ?? 0;
  const gid = info.runAs?.gid ?? process.getgid?.() ?? 0;
  return [
    '--ro-bind',
    files.resolv,
    '/etc/resolv.conf',
    '--ro-bind',
    files.hosts,
    '/etc/hosts',
    '--ro-bind',
    files.nsswitch,
    '/etc/nsswitch.conf',
    '--uid',
    String(uid),
    '--gid',
    String(gid),
  ];
}
