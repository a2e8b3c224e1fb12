// CRI RuntimeService.ContainerStatus
import { promises as fs } from 'node:fs';
import type { cri } from '@skiff/proto';
import { currentContainer } from '../container/container-state.js';
import { toCriContainerStatus } from '../container/container-view.js';
import { requireContainer } from '../container/require-container.js';
import type { RuntimeContext } from '../daemon/context.js';
import type { ContainerRecord } from '../state/records.js';

async function verboseInfo(ctx: RuntimeContext, rec: ContainerRecord): Promise<Record<string, string>> {
  const paths = ctx.paths.container(rec.id);
  const spec = await fs.readFile(paths.spec, 'utf8').then((t) => JSON.parse(t) as unknown).catch(() => null);
  return {
    info: JSON.stringify({
      sandboxID: rec.sandboxId,
      pid: rec.phase === 'running' || rec.phase === 'created' ? (rec.pid ?? 0) : 0,
      conmonPid: rec.conmonPid ?? 0,
      name: rec.fullName,
      runtimeHandler: rec.runtimeHandler,
      bundle: paths.bundle,
      rootfs: paths.rootfs,
      cgroupsPath: rec.cgroupsPath,
      image: rec.image,
      runtimeSpec: spec,
    }),
  };
}

/** Longer than a launch takes on a loaded node; a launch still going after it is told as created. */
const LAUNCH_WAIT_MS = 10_000;

/**
 * A container whose launch StartContainer has begun is told as it is once the launch is recorded
 * (starts-in-flight.ts), not as created meanwhile.
 */
export async function containerStatusCall(ctx: RuntimeContext, request: cri.ContainerStatusRequest__Output): Promise<cri.ContainerStatusResponse> {
  const found = requireContainer(ctx, 'ContainerStatus', request.container_id);
  await ctx.state.starts.settled(found.id, LAUNCH_WAIT_MS);
  const rec = await currentContainer(ctx, found);
  const response: cri.ContainerStatusResponse = { status: toCriContainerStatus(rec) };
  if (request.verbose) response.info = await verboseInfo(ctx, rec);
  return response;
}
