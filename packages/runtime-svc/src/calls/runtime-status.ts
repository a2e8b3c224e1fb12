// CRI RuntimeService.Status
import { errorMessage } from '@skiff/common';
import type { cri } from '@skiff/proto';
import { defaultNetworks } from '../cni/default-network-cache.js';
import type { RuntimeContext } from '../daemon/context.js';
import { featuresOf } from '../daemon/runtime-handlers.js';

/** NetworkReady follows the CNI configuration directory: ready once it holds a usable network. */
async function networkCondition(ctx: RuntimeContext): Promise<cri.RuntimeCondition & { file?: string }> {
  const dir = ctx.config.runtime.cni_conf_dir;
  try {
    const found = await defaultNetworks.get(dir);
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

export async function runtimeStatusCall(ctx: RuntimeContext, request: cri.StatusRequest__Output): Promise<cri.StatusResponse> {
  const { file, ...network } = await networkCondition(ctx);
  const response: cri.StatusResponse = {
    status: { conditions: [{ type: 'RuntimeReady', status: true, reason: '', message: '' }, network] },
    runtime_handlers: ctx.handlers.entries().map(([name, h]) => {
      // A pod that names no handler runs under runtime.default_handler: "" offers what that one does.
      const kind = name === '' && ctx.config.runtime.default_handler ? ctx.handlers.resolve(ctx.config.runtime.default_handler).kind : h.kind;
      return { name, features: { recursive_read_only_mounts: featuresOf(kind).recursiveReadOnlyMounts, user_namespaces: featuresOf(kind).userNamespaces } };
    }),
    features: { supplemental_groups_policy: true, user_namespaces_host_network: false, mount_options: true },
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
      // Each handler's runtime binary, its version and whether it is a runc with known container escapes.
      runtimes: JSON.stringify(ctx.runtimeVersions),
    };
  }
  return response;
}
