// CRI RuntimeService.PortForward
import { status } from '@grpc/grpc-js';
import { StatusError } from '@skiff/common';
import type { cri } from '@skiff/proto';
import type { RuntimeContext } from '../daemon/context.js';
import { registerStream } from '../streaming/stream-registration.js';

export async function portForwardCall(ctx: RuntimeContext, req: cri.PortForwardRequest__Output): Promise<cri.PortForwardResponse> {
  if (!req.pod_sandbox_id) throw new StatusError(status.INVALID_ARGUMENT, 'PortForward: pod_sandbox_id is required');
  const rec = ctx.state.findSandbox(req.pod_sandbox_id);
  if (!rec) throw new StatusError(status.NOT_FOUND, `PortForward: pod sandbox ${req.pod_sandbox_id} does not exist`);
  if (rec.phase !== 'ready') throw new StatusError(status.FAILED_PRECONDITION, `PortForward: pod sandbox ${rec.id} is not ready`);
  const hostNetwork = rec.namespaces.network === 'NODE';
  const url = await registerStream(ctx.config.stream.internal_socket, 'PortForward', {
    kind: 'portforward',
    podSandboxId: rec.id,
    // A pod on the host network shares the runtime's namespace (not necessarily PID 1's).
    netnsPath: hostNetwork ? '' : (rec.netnsPath ?? ''),
    hostNetwork,
    ports: [...req.port],
  });
  return { url };
}
