/**
 * The soak's pods. Each has one busybox container that serves HTTP (busybox httpd on 8080), is
 * probed three ways and prints numbered lines `<pod> <n>` from 0, a batch a second so that it keeps
 * L lines a second whatever a busy node delays; once /ctl/stop exists it prints `<pod> end <n>`
 * (n: how many lines it printed) and idles. /ctl is a host directory of the soak's own.
 *
 *   interface PodPlan { name, wave, failing, followed, linesPerSecond }
 *       failing: its liveness probe reads /ctl/live, which the soak removes to restart it once
 *   podManifest(plan, image, nodeName, ctlDir): V1Pod
 *   containerName                       the container's name in every pod
 */
import { join } from 'node:path';
import type { V1Pod, V1Probe } from '@kubernetes/client-node';

export const containerName = 'app';
export const HTTP_PORT = 8080;

export interface PodPlan {
  name: string;
  /** -1 for the pod that lives through the whole soak. */
  wave: number;
  failing: boolean;
  followed: boolean;
  linesPerSecond: number;
}

function script(name: string, linesPerSecond: number): string {
  return [
    `mkdir -p /www && echo ok > /www/index.html && httpd -p ${HTTP_PORT} -h /www`,
    'touch /tmp/healthy /ctl/live',
    "trap 'exit 0' TERM",
    'start=$(date +%s); n=0',
    'while [ ! -e /ctl/stop ]; do',
    `  t=$(( ($(date +%s) - start + 1) * ${linesPerSecond} ))`,
    `  if [ $t -gt $n ]; then seq $n $((t - 1)) | sed 's/^/${name} /'; n=$t; fi`,
    '  sleep 1',
    'done',
    `echo "${name} end $n"`,
    'while true; do sleep 1; done',
  ].join('\n');
}

const steady = { periodSeconds: 10, timeoutSeconds: 2, failureThreshold: 3 };

export function podManifest(plan: PodPlan, image: string, nodeName: string, ctlDir: string): V1Pod {
  // The restart on purpose must come well within the pod's one wave of life: its probe is quicker,
  // and given the time a busy node may take to run `cat`, so that only the missing file fails it.
  const liveness: V1Probe = plan.failing
    ? { exec: { command: ['cat', '/ctl/live'] }, periodSeconds: 2, timeoutSeconds: 5, failureThreshold: 2 }
    : { exec: { command: ['cat', '/tmp/healthy'] }, ...steady };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: plan.name, namespace: 'default', labels: { suite: 'soak', wave: plan.wave < 0 ? 'all' : String(plan.wave) } },
    spec: {
      nodeName,
      terminationGracePeriodSeconds: 5,
      enableServiceLinks: false,
      automountServiceAccountToken: false,
      volumes: [{ name: 'ctl', hostPath: { path: join(ctlDir, plan.name), type: 'Directory' } }],
      containers: [
        {
          name: containerName,
          image,
          imagePullPolicy: 'IfNotPresent',
          command: ['sh', '-c', script(plan.name, plan.linesPerSecond)],
          ports: [{ containerPort: HTTP_PORT, protocol: 'TCP' }],
          volumeMounts: [{ name: 'ctl', mountPath: '/ctl' }],
          startupProbe: { tcpSocket: { port: HTTP_PORT }, ...steady },
          readinessProbe: { httpGet: { path: '/index.html', port: HTTP_PORT }, ...steady },
          livenessProbe: liveness,
        },
      ],
    },
  };
}
