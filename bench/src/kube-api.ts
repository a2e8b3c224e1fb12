/**
 * The Kubernetes API calls of the kubelet benchmark, through @kubernetes/client-node with the
 * kubeconfig scripts/kube-node.sh writes: creating pods (one request each, so the bench's clock
 * starts at the request and not at a kubectl process) and watching them.
 */
import { CoreV1Api, KubeConfig, Watch, type V1Pod } from '@kubernetes/client-node';

export interface PodWatch {
  close(): void;
  /** Rejects if the watch ends or fails before close(). */
  ended: Promise<void>;
}

export interface KubeApi {
  createPod(pod: V1Pod): Promise<void>;
  /** `onPod` gets every pod the watch brings, with the time it arrived (epoch ms). */
  watchPods(namespace: string, labelSelector: string, onPod: (pod: V1Pod, receivedAtMs: number) => void): PodWatch;
}

export function connectKubeApi(kubeconfigPath: string): KubeApi {
  const config = new KubeConfig();
  config.loadFromFile(kubeconfigPath);
  const core = config.makeApiClient(CoreV1Api);
  return {
    async createPod(pod) {
      await core.createNamespacedPod({ namespace: pod.metadata?.namespace ?? 'default', body: pod });
    },
    watchPods(namespace, labelSelector, onPod) {
      let closed = false;
      let settle: { resolve: () => void; reject: (err: Error) => void } | undefined;
      const ended = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
      const fail = (err: Error): void => (closed ? settle!.resolve() : settle!.reject(err));
      const path = `/api/v1/namespaces/${namespace}/pods`;
      const watching = new Watch(config).watch(
        path,
        { labelSelector },
        (type: string, pod: V1Pod) => {
          if (type === 'ERROR') fail(new Error(`watch ${path}: ${JSON.stringify(pod)}`));
          else onPod(pod, Date.now());
        },
        (err: unknown) => fail(err instanceof Error ? err : new Error(`watch ${path} ended`)),
      );
      watching.catch(fail);
      return {
        ended,
        close() {
          closed = true;
          void watching.then((controller) => controller.abort(), () => undefined);
          settle!.resolve();
        },
      };
    },
  };
}
