import { status } from '@grpc/grpc-js';
import { StatusError, LOOPBACK_NETWORK } from '@skiff/common';
import type { Attachment } from '../cni/cni.js';
import type { CniNetworkConfig } from '../cni/config.js';
import { defaultNetworks } from '../cni/default-network-cache.js';
import { podIpsFromResult, type PodIp } from '../cni/result.js';
import type { RuntimeContext } from '../daemon/context.js';
import type { SandboxRecord } from '../state/records.js';
import { allSettledOrThrow } from '../util/settle.js';

/** The network pods join; FailedPrecondition while none is configured (Status reports NetworkReady false then). */
export async function podNetwork(ctx: RuntimeContext): Promise<CniNetworkConfig> {
  const found = await defaultNetworks.get(ctx.config.runtime.cni_conf_dir);
  if (!found) {
    throw new StatusError(
      status.FAILED_PRECONDITION,
      `no CNI network configuration in ${ctx.config.runtime.cni_conf_dir}; install one (skiff up writes a default bridge network) or use host networking`,
    );
  }
  return found.network;
}

function podAttachment(ctx: RuntimeContext, rec: SandboxRecord, netns: string): Attachment {
  const capabilityArgs: NonNullable<Attachment['capabilityArgs']> = {};
  if (rec.portMappings.length > 0) capabilityArgs.portMappings = rec.portMappings;
  const ranges = ctx.network.ipRanges();
  if (ranges) capabilityArgs['ipRanges'] = ranges;
  return {
    containerId: rec.id,
    netns,
    ifName: 'eth0',
    args: {
      IgnoreUnknown: '1',
      K8S_POD_NAMESPACE: rec.metadata.namespace,
      K8S_POD_NAME: rec.metadata.name,
      K8S_POD_INFRA_CONTAINER_ID: rec.id,
      K8S_POD_UID: rec.metadata.uid,
    },
    capabilityArgs,
  };
}

/**
 * CNI ADD of the pod network into the sandbox's namespace; resolves with the pod's addresses.
 * Loopback needs no plugin: the namespace is made with `lo` up (NetnsManager).
 */
export async function attachSandboxNetwork(ctx: RuntimeContext, rec: SandboxRecord): Promise<PodIp[]> {
  if (!rec.network || !rec.netnsPath) throw new Error(`sandbox ${rec.id} has no network to attach`);
  return podIpsFromResult(await ctx.cni.add(rec.network, podAttachment(ctx, rec, rec.netnsPath)));
}

/**
 * CNI DEL of the pod network, while the namespace still exists (plugins read addresses from it).
 * Succeeds when it was never added or is already gone, so it can be repeated. Pods started by
 * earlier versions also have a loopback attachment; every caller removes the namespace right
 * after, so it is only forgotten: the loopback plugin holds nothing outside the namespace, and
 * its DEL would only set `lo` down in it.
 */
export async function detachSandboxNetwork(ctx: RuntimeContext, rec: SandboxRecord): Promise<void> {
  if (!rec.network || !rec.netnsPath) return;
  // A namespace file with nothing mounted on it (after a reboot) makes plugins fail; an empty
  // CNI_NETNS tells them to release what they hold outside the namespace (addresses, rules).
  const netns = (await ctx.netns.exists(rec.id)) ? rec.netnsPath : '';
  await allSettledOrThrow([ctx.cni.del(rec.network, podAttachment(ctx, rec, netns)), ctx.cni.forget(LOOPBACK_NETWORK, { containerId: rec.id, netns, ifName: 'lo' })]);
}
