/**
 * The Kubernetes tools the tests run (kubelet, kube-apiserver, kubectl, etcd, e2e_node.test,
 * agnhost), built by scripts/kube-tools.sh from their pinned modules into a cache.
 *
 *   kubeToolsBin(): Promise<string>   their directory; builds them first if the cache lacks them
 *                                     ($SKIFF_KUBE_TOOLS_BIN names a directory built earlier)
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from './skiff-instance.js';

const run = promisify(execFile);
let bin: Promise<string> | undefined;

export function kubeToolsBin(): Promise<string> {
  const named = process.env['SKIFF_KUBE_TOOLS_BIN'];
  if (named) return Promise.resolve(named);
  bin ??= run('bash', [join(REPO_ROOT, 'scripts/kube-tools.sh')], { timeout: 90 * 60_000, maxBuffer: 16 * 1024 * 1024 }).then(({ stdout }) => stdout.trim().split('\n').pop() ?? '');
  return bin;
}
