/**
 * removeAllPods(runtimeSocket): stops and removes every pod sandbox the runtime lists, so that a
 * suite's leftovers (a failed spec's cleanup) are gone before its Skiff stops. Errors of single
 * pods are ignored: whatever is left is reported by the instance's own teardown.
 */
import { callUnary, createRuntimeClient } from '@skiff/proto';

export async function removeAllPods(runtimeSocket: string): Promise<void> {
  const runtime = createRuntimeClient(runtimeSocket);
  try {
    const { items } = await callUnary(runtime, 'ListPodSandbox', {}, { timeoutMs: 30_000 });
    for (const pod of items) {
      await callUnary(runtime, 'StopPodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 120_000 }).catch(() => undefined);
      await callUnary(runtime, 'RemovePodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 120_000 }).catch(() => undefined);
    }
  } finally {
    runtime.close();
  }
}
