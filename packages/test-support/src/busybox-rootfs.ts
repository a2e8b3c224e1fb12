import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';

export const HOST_BUSYBOX = '/bin/busybox';

/**
 * Makes a root filesystem holding a copy of the host's static busybox and one hard link per
 * applet in /bin. Hard links, not symlinks: busybox picks the applet from argv[0], and its
 * shell runs applets in-process only when it finds them as real files.
 */
export async function makeBusyboxRootfs(rootfs: string): Promise<void> {
  for (const d of ['bin', 'etc', 'proc', 'sys', 'dev', 'tmp', 'root', 'var/www']) await fs.mkdir(join(rootfs, d), { recursive: true });
  await fs.chmod(join(rootfs, 'tmp'), 0o1777);
  const busybox = join(rootfs, 'bin', 'busybox');
  await fs.copyFile(HOST_BUSYBOX, busybox);
  await fs.chmod(busybox, 0o755);
  const applets = execFileSync(HOST_BUSYBOX, ['--list'], { encoding: 'utf8' }).split('\n').filter(Boolean);
  for (const applet of applets) {
    if (applet === 'busybox') continue;
    await fs.link(busybox, join(rootfs, 'bin', applet)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
  }
  await fs.writeFile(join(rootfs, 'etc', 'passwd'), 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n');
  await fs.writeFile(join(rootfs, 'etc', 'group'), 'root:x:0:\ntty:x:5:\nnogroup:x:65534:\n');
}

/** Connections busybox's echo server lets wait to be accepted. */
const ECHO_BACKLOG = 64;

/**
 * busybox nc serving `cat` to every connection to `port`. Its listen backlog is the number of -l
 * flags given: with the usual -ll it is 2, a burst of connections overflows it, and the kernel's
 * SYN cookies then reset some of them mid-transfer.
 */
export function busyboxEchoServer(port: number): string[] {
  return ['nc', `-${'l'.repeat(ECHO_BACKLOG)}`, '-p', String(port), '-e', 'cat'];
}
