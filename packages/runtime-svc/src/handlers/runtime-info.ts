import { status } from '@grpc/grpc-js';
import { StatusError, errorMessage } from '@skiff/common';
import type { cri } from '@skiff/proto';
import { parsePodCidrs } from '../daemon/network-settings.js';
import { loadDefaultNetwork } from '../cni/config.js';
import type { RuntimeContext } from '../daemon/context.js';

export const RUNTIME_NAME = 'skiff';
export const RUNTIME_API_VERSION = 'v1';
/** The CRI version runtime.v1 runtimes report. */
export const CRI_VERSION = '0.1.0';

export function version(ctx: RuntimeContext): cri.VersionResponse {
  return { version: CRI_VERSION, runtime_name: RUNTIME_NAME, runtime_version: ctx.runtimeVersion, runtime_api_version: RUNTIME_API_VERSION };
}

/** NetworkReady follows the CNI configuration directory: ready once it holds a usable network. */
async function networkCondition(ctx: RuntimeContext): Promise<cri.RuntimeCondition & { file?: string }> {
  const dir = ctx.config.runtime.cni_conf_dir;
  try {
    const found = await loadDefaultNetwork(dir);
    if (found) return { type: 'NetworkReady', status: true, reason: '', message: '', file: found.file };
    return {
      type: 'NetworkReady',
      status: false,
      reason: 'NetworkPluginNotReady',
      message: `Network plugin returns error: no CNI network configuration found in ${dir}`,
    };
  } catch (err) {
    return { type: 'NetworkReady', status: false, reason: 'NetworkPluginNotReady', message: `Network plugin returns error: ${errorMessage(err)}` };
  }
}

export async function runtimeStatus(ctx: RuntimeContext, request: cri.StatusRequest__Output): Promise<cri.StatusResponse> {
  const { file, ...network } = await networkCondition(ctx);
  const response: cri.StatusResponse = {
    status: { conditions: [{ type: 'RuntimeReady', status: true, reason: '', message: '' }, network] },
    runtime_handlers: ctx.handlers.names().map((name) => ({ name, features: { recursive_read_only_mounts: false, user_namespaces: false } })),
    features: { supplemental_groups_policy: true, user_namespaces_host_network: false, mount_options: false },
  };
  if (request.verbose) {
    response.info = {
      config: JSON.stringify({
        runtime: ctx.config.runtime,
        root: ctx.config.root,
        runDir: ctx.config.run_dir,
        cgroupDriver: ctx.cgroupDriver,
        journald: ctx.journald,
        cniConfigFile: file ?? null,
        podCidrs: ctx.network.cidrs,
      }),
    };
  }
  return response;
}

export function runtimeConfig(ctx: RuntimeContext): cri.RuntimeConfigResponse {
  return { linux: { cgroup_driver: ctx.cgroupDriver === 'systemd' ? 'SYSTEMD' : 'CGROUPFS' } };
}

/** Keeps the pod CIDR; sandboxes created from now on hand it to CNI plugins that take ipRanges. */
export async function updateRuntimeConfig(ctx: RuntimeContext, request: cri.UpdateRuntimeConfigRequest__Output): Promise<cri.UpdateRuntimeConfigResponse> {
  const cidr = request.runtime_config?.network_config?.pod_cidr ?? '';
  try {
    parsePodCidrs(cidr);
  } catch (err) {
    throw new StatusError(status.INVALID_ARGUMENT, `UpdateRuntimeConfig: pod_cidr: ${errorMessage(err)}`);
  }
  if (await ctx.network.setPodCidr(cidr)) ctx.log.info({ podCidr: cidr }, 'pod CIDR updated');
  return {};
}
