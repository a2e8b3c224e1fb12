/**
 * Tar entries for a minimal busybox userland built from a static busybox (the host's unless named).
 *
 *   BUSYBOX_PATH = '/bin/busybox'
 *   TEST_USER = { name: 'skiffuser', uid: 1234, gid: 1234, home: '/home/skiffuser' }
 *   busyboxApplets(busybox?): string[]  applet paths from `busybox --list-full`, e.g. "usr/bin/env"
 *   busyboxRootfsEntries(accounts?, busybox?): TarEntry[]  the whole userland, parents before children
 *   interface RootfsAccounts { passwd, group, homes }   what /etc/passwd, /etc/group and /home hold
 *   TEST_ACCOUNTS                       root, skiffuser and nobody (the default)
 *   PASSWD, GROUP                       the /etc/passwd and /etc/group contents of TEST_ACCOUNTS
 *
 * Every applet is a hard link to bin/busybox (not a symlink), so the layer
 * exercises hard-link extraction. Also: /etc/passwd, /etc/group, /tmp (1777),
 * /root (0700), each account's home (owned by it; /home/skiffuser, 1234:1234, by
 * default), and empty /dev, /proc, /sys.
 */
import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';
import type { TarEntry } from './tar-writer.js';

export const BUSYBOX_PATH = '/bin/busybox';

export const TEST_USER = { name: 'skiffuser', uid: 1234, gid: 1234, home: '/home/skiffuser' } as const;

export const PASSWD = [
  'root:x:0:0:root:/root:/bin/sh',
  `${TEST_USER.name}:x:${TEST_USER.uid}:${TEST_USER.gid}:Skiff test user:${TEST_USER.home}:/bin/sh`,
  'nobody:x:65534:65534:nobody:/nonexistent:/bin/false',
  '',
].join('\n');

export const GROUP = ['root:x:0:', `${TEST_USER.name}:x:${TEST_USER.gid}:`, 'nogroup:x:65534:', 'nobody:x:65534:', ''].join(
  '\n',
);

export interface RootfsAccounts {
  passwd: string;
  group: string;
  homes: readonly { path: string; uid: number; gid: number }[];
}

export const TEST_ACCOUNTS: RootfsAccounts = {
  passwd: PASSWD,
  group: GROUP,
  homes: [{ path: TEST_USER.home, uid: TEST_USER.uid, gid: TEST_USER.gid }],
};

const appletCache = new Map<string, string[]>();

export function busyboxApplets(busybox = BUSYBOX_PATH): string[] {
  let applets = appletCache.get(busybox);
  if (applets === undefined) {
    const listing = execFileSync(busybox, ['--list-full'], { encoding: 'utf8' });
    const paths = listing
      .split('\n')
      .map((line) => line.trim().replace(/^\/+/, ''))
      .filter((line) => line !== '' && line !== 'bin/busybox');
    applets = [...new Set(paths)].sort();
    appletCache.set(busybox, applets);
  }
  return applets;
}

function parentDirs(path: string): string[] {
  const parts = path.split('/').slice(0, -1);
  return parts.map((_, i) => parts.slice(0, i + 1).join('/'));
}

export function busyboxRootfsEntries(accounts: RootfsAccounts = TEST_ACCOUNTS, busybox = BUSYBOX_PATH): TarEntry[] {
  const applets = busyboxApplets(busybox);
  const dirs = new Set<string>(['bin', 'etc', 'dev', 'proc', 'sys', 'root', 'tmp', 'home', 'usr', 'usr/bin', 'usr/sbin', 'sbin']);
  for (const applet of applets) for (const dir of parentDirs(applet)) dirs.add(dir);
  const homes = accounts.homes.map((home) => ({ ...home, path: home.path.replace(/^\/+/, '') }));
  for (const home of homes) for (const dir of parentDirs(home.path)) dirs.add(dir);

  const dirMode: Record<string, number> = { tmp: 0o1777, root: 0o700, proc: 0o555, sys: 0o555 };
  const entries: TarEntry[] = [...dirs].sort().map((name) => ({ type: 'dir', name, mode: dirMode[name] ?? 0o755 }));
  for (const home of homes) entries.push({ type: 'dir', name: home.path, mode: 0o755, uid: home.uid, gid: home.gid });
  entries.push({
    type: 'file',
    name: 'bin/busybox',
    mode: 0o755,
    content: { path: busybox, size: statSync(busybox).size },
  });
  for (const applet of applets) entries.push({ type: 'hardlink', name: applet, target: 'bin/busybox', mode: 0o755 });
  entries.push({ type: 'file', name: 'etc/passwd', mode: 0o644, content: accounts.passwd });
  entries.push({ type: 'file', name: 'etc/group', mode: 0o644, content: accounts.group });
  return entries;
}
