/**
 * The kubectl binaries the streaming tests drive, by absolute path:
 *
 *   spdyKubectl(): Promise<Kubectl>     kubectl 1.20 from Debian's kubernetes-client package (Go
 *       spdystream: SPDY/3.1 for exec, attach and port-forward), unpacked with `dpkg -x` into
 *       /var/cache/skiff-test, since installing the package would collide with the kubectl the
 *       machine may already have at /usr/bin/kubectl. SKIFF_TEST_KUBECTL names another one.
 *   builtKubectl(): Promise<Kubectl>    the kubectl scripts/kube-tools.sh builds (WebSocket v5 for exec,
 *       SPDY inside a WebSocket for port-forward). SKIFF_TEST_NEW_KUBECTL names another one.
 *
 * Both throw, with what is missing and how to get it, rather than let a test skip.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { debianBinary } from './debian-binary.js';
import { kubeToolsBin } from './kube-tools.js';

const run = promisify(execFile);

export interface Kubectl {
  path: string;
  /** The client's minor version (20 for v1.20.2). */
  minor: number;
}

async function clientMinor(path: string): Promise<number> {
  const { stdout } = await run(path, ['version', '--client'], { timeout: 30_000 });
  const m = /v1\.(\d+)\./.exec(stdout);
  if (!m) throw new Error(`${path} version --client printed no version: ${stdout}`);
  return Number(m[1]);
}

export async function spdyKubectl(): Promise<Kubectl> {
  const path = process.env['SKIFF_TEST_KUBECTL'] || (await debianBinary('kubernetes-client', 'usr/bin/kubectl'));
  const minor = await clientMinor(path);
  // From 1.30 on kubectl speaks WebSocket for exec and attach.
  if (minor >= 30) throw new Error(`${path} is kubectl 1.${minor}, which does not speak SPDY for exec`);
  return { path, minor };
}

export async function builtKubectl(): Promise<Kubectl> {
  const path = process.env['SKIFF_TEST_NEW_KUBECTL'] || join(await kubeToolsBin(), 'kubectl');
  if (!existsSync(path)) throw new Error(`${path} is missing: scripts/kube-tools.sh builds it, or name one in SKIFF_TEST_NEW_KUBECTL`);
  const minor = await clientMinor(path);
  // 1.31 made port-forward over a WebSocket the default; 1.30 did so for exec.
  if (minor < 31) throw new Error(`${path} is kubectl 1.${minor}; the WebSocket tests need 1.31 or later`);
  return { path, minor };
}
