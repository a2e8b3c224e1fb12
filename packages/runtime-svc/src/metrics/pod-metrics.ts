import { Semaphore } from '@skiff/common/core';
import type { cri } from '@skiff/proto';
import type { RuntimeContext } from '../daemon/context.js';
import type { StatsCollector } from '../stats/stats-collector.js';
import { nowNanos } from '../util/time.js';
import { podSandboxMetrics, type ContainerReading } from './cadvisor-metrics.js';

/** Pods read at the same time: enough to keep the thread pool busy, few enough not to queue other calls' file work behind a thousand reads. */
const PODS_AT_ONCE = 16;

/** The cAdvisor metrics of every ready pod sandbox and its containers, pods read in parallel (bounded). */
export async function allPodMetrics(ctx: RuntimeContext, stats: StatsCollector): Promise<cri.PodSandboxMetrics[]> {
  const at = nowNanos();
  const pods = [...ctx.state.sandboxes.values()].filter((p) => p.phase === 'ready');
  const limit = new Semaphore(PODS_AT_ONCE);
  const metrics = await Promise.all(
    pods.map((pod) =>
      limit.run(async () => {
        const [interfaces, containers] = await Promise.all([
          stats.podInterfaces(pod),
          Promise.all(
            ctx.state.containersOf(pod.id).map(async (c): Promise<ContainerReading> => ({
              id: c.id,
              container: c.metadata.name,
              name: c.fullName,
              image: c.image.display,
              ...(c.startedAt !== undefined && { startedAt: c.startedAt }),
              ...(await stats.containerReading(c)),
            })),
          ),
        ]);
        return podSandboxMetrics({ id: pod.id, pod: pod.metadata.name, namespace: pod.metadata.namespace, containers, interfaces }, at);
      }),
    ),
  );
  stats.forgetAllBut(new Set(ctx.state.containers.keys()));
  return metrics;
}
