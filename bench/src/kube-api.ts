/**
 * Just enough of the Kubernetes API for the kubelet benchmark, over HTTPS with the bearer token and
 * CA of a kubeconfig written by scripts/kube-node.sh: creating pods (one request each, so the
 * bench's clock starts at the request and not at a kubectl process) and watching them.
 *
 *   connectKubeApi(kubeconfigPath): Promise<KubeApi>
 *   interface KubeApi {
 *     createPod(pod): Promise<void>
 *     watchPods(namespace, labelSelector, onPod): PodWatch     onPod(pod, receivedAtMs) for every event
 *   }
 */
import { readFile } from 'node:fs/promises';
import { Agent, request, type RequestOptions } from 'node:https';

/** The fields of a Pod the benchmark reads. */
export interface PodObject {
  metadata: { name: string; uid?: string; creationTimestamp?: string };
  status?: {
    phase?: string;
    containerStatuses?: Array<{ name: string; containerID?: string; state?: { running?: unknown } }>;
  };
}

export interface PodWatch {
  close(): void;
  /** Rejects if the watch ends or fails before close(). */
  ended: Promise<void>;
}

export interface KubeApi {
  createPod(pod: object): Promise<void>;
  watchPods(namespace: string, labelSelector: string, onPod: (pod: PodObject, receivedAtMs: number) => void): PodWatch;
}

function field(kubeconfig: string, name: string): string {
  const value = new RegExp(`^\\s*${name}:\\s*(\\S+)\\s*$`, 'm').exec(kubeconfig)?.[1];
  if (value === undefined) throw new Error(`the kubeconfig has no ${name}`);
  return value;
}

export async function connectKubeApi(kubeconfigPath: string): Promise<KubeApi> {
  const kubeconfig = await readFile(kubeconfigPath, 'utf8');
  const server = new URL(field(kubeconfig, 'server'));
  const ca = await readFile(field(kubeconfig, 'certificate-authority'));
  const token = field(kubeconfig, 'token');
  const agent = new Agent({ keepAlive: true, ca, maxSockets: 32 });
  const options = (method: string, path: string): RequestOptions => ({
    method,
    host: server.hostname,
    port: server.port,
    path,
    agent,
    headers: { Authorization: `Bearer ${token}`, Accept: 'application/json', 'Content-Type': 'application/json' },
  });

  const send = (method: string, path: string, body?: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const req = request(options(method, path), (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => ((res.statusCode ?? 0) < 300 ? resolve(text) : reject(new Error(`${method} ${path}: HTTP ${res.statusCode}: ${text.slice(0, 500)}`))));
        res.on('error', reject);
      });
      req.setTimeout(60_000, () => req.destroy(new Error(`${method} ${path}: no answer within 60 s`)));
      req.on('error', reject);
      req.end(body);
    });

  return {
    async createPod(pod) {
      const namespace = (pod as { metadata?: { namespace?: string } }).metadata?.namespace ?? 'default';
      await send('POST', `/api/v1/namespaces/${namespace}/pods`, JSON.stringify(pod));
    },
    watchPods(namespace, labelSelector, onPod) {
      let closed = false;
      let settle: { resolve: () => void; reject: (err: Error) => void } | undefined;
      const ended = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
      const fail = (err: Error): void => (closed ? settle!.resolve() : settle!.reject(err));
      const path = `/api/v1/namespaces/${namespace}/pods?watch=true&labelSelector=${encodeURIComponent(labelSelector)}`;
      // A connection of its own: the watch holds it for the whole run.
      const req = request({ ...options('GET', path), agent: new Agent({ ca }) }, (res) => {
        if (res.statusCode !== 200) return fail(new Error(`watch ${path}: HTTP ${res.statusCode}`));
        let pending = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const receivedAtMs = Date.now();
          pending += chunk;
          let newline: number;
          while ((newline = pending.indexOf('\n')) >= 0) {
            const line = pending.slice(0, newline);
            pending = pending.slice(newline + 1);
            if (line.trim() === '') continue;
            const event = JSON.parse(line) as { type: string; object: PodObject };
            if (event.type === 'ERROR') return fail(new Error(`watch ${path}: ${line}`));
            onPod(event.object, receivedAtMs);
          }
        });
        res.on('end', () => fail(new Error(`watch ${path} ended`)));
        res.on('error', fail);
      });
      req.on('error', fail);
      req.end();
      return {
        ended,
        close() {
          closed = true;
          req.destroy();
          settle!.resolve();
        },
      };
    },
  };
}
