/**
 * Pods as the kubelet runs them on Skiff, through a real API server and kubectl: init and app
 * containers, probes and restarts, resources, volumes, host ports, logs and their rotation, exec,
 * attach, cp and port-forward, a RuntimeClass for gVisor, an NRI plugin adjusting a pod's container,
 * restarts of the kubelet and of each Skiff daemon, and deletion.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import type { V1Container, V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { callUnary } from '@skiff/proto';
import { getFreePort } from './lib/free-port.js';
import { startKubeNode, type KubeNode } from './lib/kube-node.js';
import { nriPluginBinary, startNriPlugin } from './lib/nri-plugins.js';
import { startRuntimeHarness, type RuntimeHarness } from './lib/runtime-harness.js';
import { until } from './lib/skiff-instance.js';

const run = promisify(execFile);

let h: RuntimeHarness;
let node: KubeNode;
let busybox: string;


before(async () => {
  h = await startRuntimeHarness({ images: ['busybox'] });
  busybox = h.imageRef('busybox');
  node = await startKubeNode(h.skiff, {
    kubeletConfig: [
      'containerLogMaxSize: 8Ki',
      'containerLogMaxFiles: 10',
      'containerLogMonitorInterval: 3s',
    ].join('\n'),
  });
});

after(async () => {
  await node?.stop();
  await h?.stop();
  await node?.removeCgroupRoot();
});

function container(name: string, script: string, extra: Partial<V1Container> = {}): V1Container {
  return { name, image: busybox, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', script], ...extra };
}

function podObject(name: string, spec: V1Pod['spec'], labels: Record<string, string> = {}): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels: { suite: 'kubelet', ...labels } },
    spec: { nodeName: node.nodeName, terminationGracePeriodSeconds: 5, ...spec! },
  };
}

function statusOf(pod: V1Pod, name: string): V1ContainerStatus {
  const status = [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])].find((s) => s.name === name);
  if (!status) throw new Error(`pod ${pod.metadata?.name} has no status for container ${name}: ${JSON.stringify(pod.status)}`);
  return status;
}

const isReady = (pod: V1Pod) => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
const isRunning = (pod: V1Pod) => pod.status?.phase === 'Running' && (pod.status.containerStatuses ?? []).every((s) => s.state?.running !== undefined);
const restartCounts = (pod: V1Pod) => Object.fromEntries((pod.status?.containerStatuses ?? []).map((s) => [s.name, s.restartCount]));
const containerIds = (pod: V1Pod) => Object.fromEntries((pod.status?.containerStatuses ?? []).map((s) => [s.name, s.containerID]));

async function exec(pod: string, containerName: string, script: string, env?: Record<string, string>): Promise<string> {
  return (await node.kubectl(['exec', pod, '-c', containerName, '--', 'sh', '-c', script], env ? { env } : {})).stdout;
}

async function fetchText(url: string, timeoutMs = 20_000): Promise<string> {
  return until(`${url} to answer`, timeoutMs, async () => (await fetch(url, { signal: AbortSignal.timeout(2000) })).text());
}

const WEB_POD = 'web';
let hostPort: number;

describe('a pod with an init container, two app containers, probes, resources and volumes', () => {
  before(async () => {
    hostPort = await getFreePort();
    await node.apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'web-config', namespace: 'default' }, data: { greeting: 'hello from a configmap' } });
    await node.apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'web-secret', namespace: 'default' }, stringData: { password: 's3cret' } });
    await node.apply(
      podObject(
        WEB_POD,
        {
          volumes: [
            { name: 'work', emptyDir: {} },
            { name: 'podinfo', downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }, { path: 'name', fieldRef: { fieldPath: 'metadata.name' } }] } },
            {
              name: 'projected',
              projected: {
                sources: [
                  { configMap: { name: 'web-config' } },
                  { secret: { name: 'web-secret' } },
                  { downwardAPI: { items: [{ path: 'cpu-limit', resourceFieldRef: { containerName: 'httpd', resource: 'limits.cpu', divisor: '1m' } }] } },
                ],
              },
            },
          ],
          initContainers: [container('init', 'echo made-by-init > /work/init', { volumeMounts: [{ name: 'work', mountPath: '/work' }] })],
          containers: [
            container('httpd', 'mkdir -p /www && cp /work/init /www/index.html && exec httpd -f -p 8080 -h /www', {
              ports: [{ containerPort: 8080, hostPort, protocol: 'TCP' }],
              resources: { requests: { cpu: '100m', memory: '32Mi' }, limits: { cpu: '500m', memory: '64Mi' } },
              readinessProbe: { httpGet: { path: '/index.html', port: 8080 }, periodSeconds: 1 },
              livenessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 2, timeoutSeconds: 5 },
              volumeMounts: [
                { name: 'work', mountPath: '/work' },
                { name: 'podinfo', mountPath: '/etc/podinfo' },
                { name: 'projected', mountPath: '/etc/projected' },
              ],
            }),
            container('sidecar', 'touch /tmp/healthy && exec sleep 3600', {
              readinessProbe: { exec: { command: ['cat', '/tmp/healthy'] }, periodSeconds: 1 },
              // A missing file fails the probe at once; an exec slowed past the default second by a
              // busy machine must not count as a failure too, with one failure enough to restart.
              livenessProbe: { exec: { command: ['cat', '/tmp/healthy'] }, periodSeconds: 1, timeoutSeconds: 5, failureThreshold: 1 },
            }),
          ],
        },
        { app: 'web' },
      ),
    );
    await node.waitForPod(WEB_POD, 'to be running and ready', (p) => isRunning(p) && isReady(p));
  });

  test('the init container ran to completion before the app containers, which see its work', async () => {
    const pod = await node.pod(WEB_POD);
    const init = statusOf(pod, 'init');
    assert.equal(init.state?.terminated?.exitCode, 0);
    assert.equal(init.state?.terminated?.reason, 'Completed');
    const initFinished = Date.parse(String(init.state?.terminated?.finishedAt));
    const httpdStarted = Date.parse(String(statusOf(pod, 'httpd').state?.running?.startedAt));
    assert.ok(initFinished <= httpdStarted, `init finished at ${initFinished}, httpd started at ${httpdStarted}`);
    assert.equal(await exec(WEB_POD, 'httpd', 'cat /work/init'), 'made-by-init\n');
  });

  test('the host port reaches the container', async () => {
    assert.equal(await fetchText(`http://127.0.0.1:${hostPort}/index.html`), 'made-by-init\n');
  });

  test('resource limits are in the container\'s cgroup and the pod\'s cgroup sits under the kubelet\'s root', async () => {
    assert.equal((await exec(WEB_POD, 'httpd', 'cat /sys/fs/cgroup/memory/memory.limit_in_bytes')).trim(), String(64 * 1024 * 1024));
    const quota = Number((await exec(WEB_POD, 'httpd', 'cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us')).trim());
    const period = Number((await exec(WEB_POD, 'httpd', 'cat /sys/fs/cgroup/cpu/cpu.cfs_period_us')).trim());
    assert.equal(quota / period, 0.5);
    const uid = (await node.pod(WEB_POD)).metadata?.uid;
    assert.ok(existsSync(`/sys/fs/cgroup/memory${node.cgroupRoot}/kubepods/burstable/pod${uid}`), 'the burstable pod cgroup exists');
  });

  test('downward-API and projected volumes hold what the pod was given', async () => {
    assert.match(await exec(WEB_POD, 'httpd', 'cat /etc/podinfo/labels'), /app="web"/);
    assert.equal(await exec(WEB_POD, 'httpd', 'cat /etc/podinfo/name'), WEB_POD);
    assert.equal(await exec(WEB_POD, 'httpd', 'cat /etc/projected/greeting'), 'hello from a configmap');
    assert.equal(await exec(WEB_POD, 'httpd', 'cat /etc/projected/password'), 's3cret');
    assert.equal(await exec(WEB_POD, 'httpd', 'cat /etc/projected/cpu-limit'), '500');
  });

  test('a failed liveness probe restarts that container alone, as the kubelet reports it', async () => {
    const before = await node.pod(WEB_POD);
    const sidecarBefore = statusOf(before, 'sidecar');
    await exec(WEB_POD, 'sidecar', 'rm /tmp/healthy');
    const after = await node.waitForPod(WEB_POD, 'to restart its sidecar', (p) => statusOf(p, 'sidecar').restartCount > sidecarBefore.restartCount && isReady(p));
    const sidecar = statusOf(after, 'sidecar');
    assert.ok(sidecar.lastState?.terminated, `lastState: ${JSON.stringify(sidecar.lastState)}`);
    assert.equal(sidecar.lastState.terminated.containerID, sidecarBefore.containerID);
    assert.notEqual(sidecar.containerID, sidecarBefore.containerID);
    assert.equal(statusOf(after, 'httpd').restartCount, 0);
    assert.equal(statusOf(after, 'httpd').containerID, statusOf(before, 'httpd').containerID);
  });
});

describe('kubectl logs', () => {
  const POD = 'logger';
  before(async () => {
    await node.apply(
      podObject(POD, {
        volumes: [{ name: 'state', emptyDir: {} }],
        containers: [
          // The first run prints and fails; the second prints and stays up, printing a line a second.
          container('app', 'n=$(( $(cat /state/n 2>/dev/null || echo 0) + 1 )); echo $n > /state/n; echo run-$n; echo err-$n >&2; if [ $n -eq 1 ]; then exit 1; fi; i=0; while true; do echo tick-$i; i=$((i+1)); sleep 1; done', {
            volumeMounts: [{ name: 'state', mountPath: '/state' }],
          }),
        ],
      }),
    );
    await node.waitForPod(POD, 'to run its second attempt', (p) => statusOf(p, 'app').restartCount >= 1 && isRunning(p));
  });

  test('shows the current and the previous run, stdout and stderr', async () => {
    // The lines reach the file through the journal a moment after they were printed; stdout and
    // stderr are two pipes, read in either order.
    const current = await until('the second run\'s lines in kubectl logs', 30_000, async () => {
      const { stdout } = await node.kubectl(['logs', POD]);
      return stdout.includes('tick-0\n') && stdout.includes('err-2\n') ? stdout : undefined;
    });
    const lines = current.split('\n');
    assert.ok(lines.includes('run-2') && lines.indexOf('run-2') < lines.indexOf('tick-0'), current);
    assert.ok(!lines.includes('run-1') && !lines.includes('err-1'), current);
    const previous = (await node.kubectl(['logs', POD, '--previous'])).stdout;
    assert.equal(previous.split('\n').filter(Boolean).sort().join(','), 'err-1,run-1');
  });

  test('--timestamps prefixes each line with its RFC 3339 time, --since leaves out older lines', async () => {
    const stamped = (await node.kubectl(['logs', POD, '--timestamps'])).stdout.split('\n').filter(Boolean);
    for (const line of stamped) assert.match(line, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z (run|err|tick)-\d+$/);
    // A tick a second: by tick-5, run-2 was printed at least five seconds ago.
    await until('tick-5', 30_000, async () => ((await node.kubectl(['logs', POD])).stdout.includes('tick-5\n') ? true : undefined));
    const since = (await node.kubectl(['logs', POD, '--since=2s'])).stdout;
    assert.doesNotMatch(since, /run-2/);
    assert.match(since, /tick-\d+/);
  });

  test('-f follows new lines as they are written', async () => {
    const child = node.spawnKubectl(['logs', '-f', '--tail=1', POD]);
    try {
      let out = '';
      child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      const ticks = await until('three new ticks through -f', 20_000, async () => {
        const seen = out.split('\n').filter((l) => l.startsWith('tick-'));
        return seen.length >= 3 ? seen : undefined;
      });
      const numbers = ticks.map((t) => Number(t.slice(5)));
      assert.deepEqual(numbers.slice(0, 3), [numbers[0]!, numbers[0]! + 1, numbers[0]! + 2]);
    } finally {
      child.kill();
    }
  });
});

/** The content of every line of a CRI log file, joining partial records; the format read here on its own terms. */
function criLogContent(file: string): string[] {
  const lines: string[] = [];
  let pending = '';
  for (const record of file.split('\n')) {
    if (!record) continue;
    const m = /^\S+ (stdout|stderr) ([PF]) (.*)$/.exec(record);
    if (!m) throw new Error(`not a CRI log record: ${JSON.stringify(record)}`);
    pending += m[3];
    if (m[2] === 'F') {
      lines.push(pending);
      pending = '';
    }
  }
  return lines;
}

/** Every line of the container's log files, oldest file first (rotated ones may be gzipped); undefined if a rotation ran while reading. */
async function allLogLines(logDir: string): Promise<{ lines: string[]; rotated: number } | undefined> {
  const names = (await readdir(logDir)).sort();
  const rotated = names.filter((n) => n !== '0.log');
  let lines: string[] = [];
  for (const name of [...rotated, '0.log']) {
    const raw = await readFile(join(logDir, name));
    lines = lines.concat(criLogContent((name.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8')));
  }
  return (await readdir(logDir)).sort().join() === names.join() ? { lines, rotated: rotated.length } : undefined;
}

describe('log rotation by the kubelet', () => {
  test('rotates at containerLogMaxSize and loses no line across rotations', async () => {
    const POD = 'rotated';
    // 100-byte numbered lines, 40 a second, until told to stop; then a last line saying how many.
    const script = `i=0; pad=$(printf '%0.sx' $(seq 1 84)); while [ ! -e /tmp/stop ]; do printf 'line-%05d-%s\\n' $i $pad; i=$((i+1)); [ $((i % 4)) -eq 0 ] && sleep 0.1; done; echo "done-$i"; exec sleep 3600`;
    await node.apply(podObject(POD, { containers: [container('app', script)] }));
    const pod = await node.waitForPod(POD, 'to run', isRunning);
    const logDir = join(node.podLogsDir, `default_${POD}_${pod.metadata!.uid}`, 'app');
    await until('two rotations', 120_000, async () => ((await readdir(logDir)).length >= 3 ? true : undefined));
    await exec(POD, 'app', 'touch /tmp/stop');
    const { lines, rotated } = await until('the last line in the files', 60_000, async () => {
      const read = await allLogLines(logDir);
      return read?.lines.at(-1)?.startsWith('done-') ? read : undefined;
    });
    const count = Number(lines.at(-1)!.slice('done-'.length));
    const numbers = lines.slice(0, -1).map((l) => Number(/^line-(\d+)-x{84}$/.exec(l)?.[1]));
    assert.ok(rotated >= 2, `${rotated} rotated files`);
    assert.deepEqual(numbers, Array.from({ length: count }, (_, i) => i), `${rotated} rotated files hold every line once, in order`);
    await node.kubectl(['delete', 'pod', POD, '--grace-period=1']);
  });
});

describe('kubectl exec, attach, cp and port-forward through the API server and the kubelet', () => {
  const WEBSOCKET = {};
  const SPDY = { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false', KUBECTL_PORT_FORWARD_WEBSOCKETS: 'false' };

  for (const [transport, env] of [['WebSocket', WEBSOCKET], ['SPDY', SPDY]] as const) {
    test(`exec over ${transport}: output, stdin and the exit code`, async () => {
      const { stdout } = await node.kubectl(['exec', '-i', WEB_POD, '-c', 'httpd', '--', 'sh', '-c', 'read line; echo got-$line; echo to-stderr >&2'], { input: 'hello\n', env });
      assert.equal(stdout, 'got-hello\n');
      await assert.rejects(node.kubectl(['exec', WEB_POD, '-c', 'httpd', '--', 'sh', '-c', 'exit 7'], { env }), /exited 7/);
    });

    test(`exec -it over ${transport}: a terminal of the client's size`, async () => {
      // script(1) gives kubectl a terminal of its own, as a person's shell would.
      const command = `stty cols 91 rows 33; ${node.kubectlPath} exec -it ${WEB_POD} -c httpd -- sh -c 'tty; stty size'`;
      const { stdout } = await run('script', ['-qfec', command, '/dev/null'], { env: { ...process.env, KUBECONFIG: join(node.dir, 'kubeconfig'), ...env }, timeout: 60_000 });
      assert.match(stdout, /\/dev\/pts\/\d+/);
      assert.match(stdout, /33 91/);
    });

    test(`port-forward over ${transport}`, async () => {
      const child = node.spawnKubectl(['port-forward', `pod/${WEB_POD}`, ':8080'], env);
      try {
        let out = '';
        child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
        const local = await until('port-forward to listen', 30_000, async () => /Forwarding from 127\.0\.0\.1:(\d+)/.exec(out)?.[1]);
        assert.equal(await fetchText(`http://127.0.0.1:${local}/index.html`), 'made-by-init\n');
      } finally {
        child.kill();
      }
    });
  }

  test('attach to a container\'s stdin and stdout', async () => {
    const POD = 'attached';
    await node.apply(podObject(POD, { containers: [container('app', 'while read line; do echo got-$line; done', { stdin: true })] }));
    await node.waitForPod(POD, 'to run', isRunning);
    const child = node.spawnKubectl(['attach', '-i', POD, '-c', 'app']);
    try {
      let out = '';
      child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      // Lines sent before the attach is up are read by no one: send until one comes back.
      await until('an echoed line through attach', 30_000, async () => {
        child.stdin!.write('ping\n');
        await new Promise((r) => setTimeout(r, 300));
        return out.includes('got-ping') ? true : undefined;
      });
    } finally {
      child.kill();
    }
    await node.kubectl(['delete', 'pod', POD, '--grace-period=1']);
  });

  test('cp copies a file into a container and back', async () => {
    const work = await mkdtemp(join(tmpdir(), 'skiff-kubectl-cp-'));
    try {
      const content = Array.from({ length: 2000 }, (_, i) => `row ${i}`).join('\n');
      await writeFile(join(work, 'in.txt'), content);
      await node.kubectl(['cp', join(work, 'in.txt'), `default/${WEB_POD}:/tmp/copied.txt`, '-c', 'httpd']);
      assert.equal(await exec(WEB_POD, 'httpd', 'cat /tmp/copied.txt'), content);
      await node.kubectl(['cp', `default/${WEB_POD}:/tmp/copied.txt`, join(work, 'out.txt'), '-c', 'httpd']);
      assert.equal(await readFile(join(work, 'out.txt'), 'utf8'), content);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });
});

describe('a RuntimeClass for the gVisor handler', () => {
  test('runs the pod under runsc', async () => {
    await node.apply({ apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', metadata: { name: 'gvisor' }, handler: 'runsc' });
    const POD = 'sandboxed';
    await node.apply(podObject(POD, { runtimeClassName: 'gvisor', containers: [container('app', 'echo in-gvisor; exec sleep 3600')] }));
    const pod = await node.waitForPod(POD, 'to run', isRunning);
    assert.match(await exec(POD, 'app', 'dmesg'), /gVisor/);
    // The line reaches the log file through the journal a moment after the container printed it.
    await until('the sandboxed container\'s line in kubectl logs', 30_000, async () => ((await node.kubectl(['logs', POD])).stdout === 'in-gvisor\n' ? true : undefined));
    const { items } = await callUnary(h.runtime, 'ListPodSandbox', { filter: { label_selector: { 'io.kubernetes.pod.uid': pod.metadata!.uid! } } }, { timeoutMs: 10_000 });
    assert.equal(items.length, 1);
    assert.equal(items[0]!.runtime_handler, 'runsc');
    await node.kubectl(['delete', 'pod', POD, '--grace-period=1']);
    await node.waitForPodGone(POD);
  });
});

describe('an NRI plugin on the node', () => {
  test("adjusts a pod's container made through the API server: its environment variable and rlimit are in the running container", async () => {
    const binary = await nriPluginBinary();
    const registered = () => h.skiff.output().split('\n').some((l) => l.includes('NRI plugin registered') && l.includes('"20-kube-adjust"'));
    const plugin = await startNriPlugin(binary, join(h.skiff.runDir, 'nri.sock'), ['-name', 'kube-adjust', '-idx', '20', '-mode', 'adjust', '-only', 'nri-', '-env', 'NRI_ADJUSTED=by-plugin', '-nofile', '4242'], registered);
    const POD = 'nri-adjusted';
    try {
      await node.apply(podObject(POD, { containers: [container('nri-app', 'exec sleep 3600')] }));
      await node.waitForPod(POD, 'to run', isRunning);
      assert.equal(await exec(POD, 'nri-app', 'echo "$NRI_ADJUSTED $(ulimit -n)"'), 'by-plugin 4242\n');
    } finally {
      await plugin.stop();
      await node.kubectl(['delete', 'pod', POD, '--grace-period=1']);
    }
  });
});

/** ListPodSandbox calls runtime-svc has answered, from its metrics (its kubelet's PLEG makes one a relist). */
async function podListings(): Promise<number> {
  const address = (await readFile(join(h.skiff.runDir, 'runtime-svc.metrics'), 'utf8')).trim();
  const page = await (await fetch(`http://${address}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
  const line = page.split('\n').find((l) => l.startsWith('skiff_grpc_requests_total{') && l.includes('method="ListPodSandbox"') && l.includes('code="OK"'));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

/** Until the kubelet has relisted the pods twice more: whatever a relist would find amiss is found by then. */
async function relistedTwice(): Promise<void> {
  const start = await podListings();
  await until('two more relists by the kubelet', 60_000, async () => ((await podListings()) >= start + 2 ? true : undefined));
}

describe('restarts', () => {
  test('the kubelet restarted restarts no pod', async () => {
    const before = await node.pod(WEB_POD);
    const oldPid = await node.kubeletPid();
    await node.restartKubelet();
    assert.notEqual(await node.kubeletPid(), oldPid);
    await relistedTwice();
    const after = await node.waitForPod(WEB_POD, 'to be ready again', isReady);
    assert.deepEqual(restartCounts(after), restartCounts(before));
    assert.deepEqual(containerIds(after), containerIds(before));
  });

  for (const daemon of ['runtime-svc', 'image-svc', 'stream-svc', 'logs-svc']) {
    test(`${daemon} SIGKILLed while the kubelet runs: no pod restarted, no container lost, the node Ready`, async () => {
      const before = await node.pod(WEB_POD);
      const pid = await h.skiff.servicePid(daemon);
      assert.ok(pid, `${daemon} pid`);
      process.kill(pid, 'SIGKILL');
      await h.skiff.waitForNewPid(daemon, pid);
      // Until the new daemon serves, calls through it fail and the kubelet retries them.
      const served = await until(`an exec through the kubelet after ${daemon} restarted`, 60_000, () => exec(WEB_POD, 'httpd', 'cat /work/init'));
      assert.equal(served, 'made-by-init\n');
      await until('the node to be Ready', 60_000, async () => ((await node.nodeReady()) ? true : undefined));
      await relistedTwice();
      const after = await node.waitForPod(WEB_POD, 'to be ready', isReady);
      assert.deepEqual(restartCounts(after), restartCounts(before));
      assert.deepEqual(containerIds(after), containerIds(before));
      assert.ok(await node.nodeReady());
    });
  }
});

describe('deletion', () => {
  test('a pod deleted with a grace period leaves nothing behind', async () => {
    const POD = 'deleted';
    await node.apply(podObject(POD, { containers: [container('app', 'trap "echo got-term; exit 0" TERM; echo up; while true; do sleep 0.2; done')] }));
    const pod = await node.waitForPod(POD, 'to run', isRunning);
    const uid = pod.metadata!.uid!;
    const { items } = await callUnary(h.runtime, 'ListPodSandbox', { filter: { label_selector: { 'io.kubernetes.pod.uid': uid } } }, { timeoutMs: 10_000 });
    assert.equal(items.length, 1);
    const sandboxId = items[0]!.id;
    const podIp = (await h.podStatus(sandboxId)).network?.ip;
    assert.ok(podIp);
    await node.kubectl(['delete', 'pod', POD, '--grace-period=5'], { timeoutMs: 60_000 });
    await node.waitForPodGone(POD);
    await until('the kubelet to remove the sandbox', 90_000, async () => {
      const left = await callUnary(h.runtime, 'ListPodSandbox', { filter: { id: sandboxId } }, { timeoutMs: 10_000 });
      return left.items.length === 0 ? true : undefined;
    });
    const inventory = await h.settledInventory();
    const mentions = JSON.stringify(inventory);
    assert.ok(!mentions.includes(sandboxId), `nothing of sandbox ${sandboxId} is left: ${mentions}`);
    assert.ok(!Object.keys(inventory.ipOwners).includes(podIp!), `${podIp} was released`);
    await until('the kubelet to remove the pod\'s log directory and cgroup', 90_000, async () => {
      const logsLeft = (await readdir(node.podLogsDir)).filter((n) => n.includes(uid));
      const cgroupLeft = ['besteffort', 'burstable', ''].some((qos) => existsSync(join(`/sys/fs/cgroup/memory${node.cgroupRoot}/kubepods`, qos, `pod${uid}`)));
      return logsLeft.length === 0 && !cgroupLeft ? true : undefined;
    });
  });
});
