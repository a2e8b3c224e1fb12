// CRI RuntimeService.UpdateRuntimeConfig
import { status } from '@grpc/grpc-js';
import { StatusError, errorMessage } from '@skiff/common';
import type { cri } from '@skiff/proto';
import type { RuntimeContext } from '../daemon/context.js';
import { parsePodCidrs } from '../daemon/network-settings.js';

/** Keeps the pod CIDR; sandboxes created from now on hand it to CNI plugins that take ipRanges. */
export async function updateRuntimeConfigCall(ctx: RuntimeContext, request: cri.UpdateRuntimeConfigRequest__Output): Promise<cri.UpdateRuntimeConfigResponse> {
  const cidr = request.runtime_config?.network_config?.pod_cidr ?? '';
  try {
    parsePodCidrs(cidr);
  } catch (err) {
    throw new StatusError(status.INVALID_ARGUMENT, `UpdateRuntimeConfig: pod_cidr: ${errorMessage(err)}`);
  }
  if (await ctx.network.setPodCidr(cidr)) ctx.log.info({ podCidr: cidr }, 'pod CIDR updated');
  return {};
}
