/**
 * A one-node Kubernetes on a test's Skiff instance, through scripts/kube-node.sh: etcd, kube-apiserver
 * and a kubelet on free loopback ports, in a temp directory, with a cgroup root of its own.
 *
 *   startKubeNode(skiff, { standalone?, kubeletConfig?, evictionHard? }): Promise<KubeNode>
 *       standalone: the kubelet alone (static pods from manifestsDir); kubeletConfig: further
 *       KubeletConfiguration keys (YAML lines); evictionHard: its thresholds (`imagefs.available: "99%"`)
 *   interface KubeNode {
 *     dir, nodeName, manifestsDir, podLogsDir, kubeletRoot, cgroupRoot, kubectlPath
 *     kubectl(args, { input?, env?, timeoutMs? }?): Promise<{ stdout, stderr }>   throws on a non-zero exit
 *     spawnKubectl(args, env?): ChildProcess        for -f, -it, attach and port-forward
 *     apply(object): Promise<void>                   kubectl apply of a manifest object
 *     pod(name, namespace?): Promise<V1Pod>
 *     waitForPod(name, what, test, timeoutMs?): Promise<V1Pod>   until test(pod) holds
 *     waitForPodGone(name, timeoutMs?): Promise<void>
 *     nodeReady(): Promise<boolean>
 *     kubeletPid(): Promise<number | undefined>
 *     restartKubelet(): Promise<void>
 *     stop(): Promise<void>                          deletes the pods it knows, then `kube-node.sh down`
 *     removeCgroupRoot(): Promise<void>              once the runtime removed the kubelet's pods: the
 *                                                    cgroups the kubelet made; throws if one stays
 *   }
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { V1Pod } from '@kubernetes/client-node';
import { cgroupExistsAnywhere, removeCgroupEverywhere } from '@skiff/test-support';
import { getFreePort } from './free-port.js';
import { kubeToolsBin } from './kube-tools.js';
import { REPO_ROOT, until, type SkiffInstance } from './skiff-instance.js';
import { makeTempDir, removeDir } from './tmp.js';

const run = promisify(execFile);
const SCRIPT = join(REPO_ROOT, 'scripts/kube-node.sh');

export interface KubeNodeOptions {
  standalone?: boolean;
  kubeletConfig?: string;
  evictionHard?: string;
}

export interface KubectlOptions {
  input?: string;
  env?: Record<string, string>;
  timeoutMs?: number;
}

export interface KubeNode {
  dir: string;
  nodeName: string;
  manifestsDir: string;
  podLogsDir: string;
  kubeletRoot: string;
  cgroupRoot: string;
  kubectlPath: string;
  kubectl(args: string[], options?: KubectlOptions): Promise<{ stdout: string; stderr: string }>;
  spawnKubectl(args: string[], env?: Record<string, string>): ChildProcess;
  apply(object: object): Promise<void>;
  pod(name: string, namespace?: string): Promise<V1Pod>;
  waitForPod(name: string, what: string, test: (pod: V1Pod) => boolean, timeoutMs?: number): Promise<V1Pod>;
  waitForPodGone(name: string, timeoutMs?: number): Promise<void>;
  nodeReady(): Promise<boolean>;
  kubeletPid(): Promise<number | undefined>;
  restartKubelet(): Promise<void>;
  stop(): Promise<void>;
  removeCgroupRoot(): Promise<void>;
}

export async function startKubeNode(skiff: SkiffInstance, options: KubeNodeOptions = {}): Promise<KubeNode> {
  const bin = await kubeToolsBin();
  const dir = join(await makeTempDir('skiff-kube-node'), 'node');
  const cgroupRoot = `/skiff-kube-node-${process.pid}-${Date.now()}`;
  const scriptEnv: Record<string, string> = {
    ...(process.env as Record<string, string>),
    SKIFF_KUBE_TOOLS_BIN: bin,
    KUBE_NODE_DIR: dir,
    KUBE_NODE_NAME: 'localhost',
    KUBE_NODE_RUNTIME_ENDPOINT: `unix://${skiff.runtimeSocket}`,
    KUBE_NODE_IMAGE_ENDPOINT: `unix://${skiff.imageSocket}`,
    KUBE_NODE_ETCD_PORT: String(await getFreePort()),
    KUBE_NODE_ETCD_PEER_PORT: String(await getFreePort()),
    KUBE_NODE_API_PORT: String(await getFreePort()),
    KUBE_NODE_KUBELET_PORT: String(await getFreePort()),
    KUBE_NODE_HEALTHZ_PORT: String(await getFreePort()),
    KUBE_NODE_CGROUP_ROOT: cgroupRoot,
    KUBE_NODE_STANDALONE: options.standalone ? '1' : '0',
    KUBE_NODE_KUBELET_CONFIG: options.kubeletConfig ?? '',
    ...(options.evictionHard === undefined ? {} : { KUBE_NODE_EVICTION_HARD: options.evictionHard }),
  };
  const script = (command: string) => run('bash', [SCRIPT, command], { env: scriptEnv, timeout: 300_000, maxBuffer: 16 * 1024 * 1024 });
  const kubeconfig = join(dir, 'kubeconfig');
  const kubectlPath = join(bin, 'kubectl');
  const kubectlEnv = (extra: Record<string, string> = {}) => ({ ...(process.env as Record<string, string>), KUBECONFIG: kubeconfig, ...extra });
  const created = new Set<string>();

  const kubectl: KubeNode['kubectl'] = async (args, kubectlOptions = {}) => {
    const child = execFile(kubectlPath, args, { env: kubectlEnv(kubectlOptions.env), timeout: kubectlOptions.timeoutMs ?? 60_000, maxBuffer: 64 * 1024 * 1024 });
    if (kubectlOptions.input !== undefined) child.stdin?.end(kubectlOptions.input);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
    if (code !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${code}: ${stderr.trim()}`);
    return { stdout, stderr };
  };

  const pod = async (name: string, namespace = 'default'): Promise<V1Pod> => JSON.parse((await kubectl(['get', 'pod', '-n', namespace, name, '-o', 'json'])).stdout) as V1Pod;

  const node: KubeNode = {
    dir,
    nodeName: 'localhost',
    manifestsDir: join(dir, 'manifests'),
    podLogsDir: join(dir, 'pods-logs'),
    kubeletRoot: join(dir, 'kubelet'),
    cgroupRoot,
    kubectlPath,
    kubectl,
    spawnKubectl: (args, env) => spawn(kubectlPath, args, { env: kubectlEnv(env), stdio: ['pipe', 'pipe', 'pipe'] }),
    async apply(object) {
      const meta = (object as { kind?: string; metadata?: { name?: string } }).metadata;
      if ((object as { kind?: string }).kind === 'Pod' && meta?.name) created.add(meta.name);
      await kubectl(['apply', '-f', '-'], { input: JSON.stringify(object) });
    },
    pod,
    waitForPod: (name, what, test, timeoutMs = 120_000) =>
      until(`pod ${name} ${what}`, timeoutMs, async () => {
        const p = await pod(name);
        if (test(p)) return p;
        throw new Error(`now: ${JSON.stringify(p.status)}`);
      }),
    async waitForPodGone(name, timeoutMs = 120_000) {
      await until(`pod ${name} to be deleted`, timeoutMs, async () => {
        const { stdout } = await kubectl(['get', 'pod', name, '--ignore-not-found', '-o', 'name']);
        return stdout.trim() === '' ? true : undefined;
      });
    },
    async nodeReady() {
      const { stdout } = await kubectl(['get', 'node', 'localhost', '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}']);
      return stdout.trim() === 'True';
    },
    async kubeletPid() {
      const pid = Number.parseInt(await readFile(join(dir, 'run', 'kubelet.pid'), 'utf8').catch(() => ''), 10);
      return Number.isInteger(pid) ? pid : undefined;
    },
    async restartKubelet() {
      await script('restart-kubelet');
    },
    async stop() {
      if (!options.standalone) {
        for (const name of created) await kubectl(['delete', 'pod', name, '--ignore-not-found', '--grace-period=0', '--force'], { timeoutMs: 60_000 }).catch(() => undefined);
      }
      await script('down');
      await removeDir(join(dir, '..'));
    },
    // `down` leaves the pod cgroups that still held containers: the kubelet is gone before the
    // runtime has stopped them, so they can only go once the test's runtime removed its pods.
    async removeCgroupRoot() {
      await removeCgroupEverywhere(cgroupRoot);
      if (await cgroupExistsAnywhere(cgroupRoot)) throw new Error(`the kubelet's cgroup root ${cgroupRoot} is still there after the runtime removed every pod`);
    },
  };
  try {
    await script('up');
  } catch (err) {
    const logs = await Promise.all(['etcd', 'kube-apiserver', 'kubelet'].map(async (n) => `--- ${n}\n${(await readFile(join(dir, 'logs', `${n}.log`), 'utf8').catch(() => '')).slice(-4000)}`));
    await script('down').catch(() => undefined);
    await removeDir(join(dir, '..'));
    throw new Error(`${(err as Error).message}\n${logs.join('\n')}`);
  }
  return node;
}
