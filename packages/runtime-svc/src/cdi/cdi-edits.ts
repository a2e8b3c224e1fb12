import type { cri } from '@skiff/proto';
import { resolveHostDevice, type ResolvedDevice } from '../oci/devices.js';
import type { Hook, Hooks } from '../oci/runtime-spec.js';
import type { BindMountInput, ContainerSpecInput, MountPropagation } from '../oci/spec-builder.js';
import { CdiError, type CdiContainerEdits, type CdiDeviceNode, type CdiMount } from './cdi-spec.js';
import type { ResolvedCdiDevice } from './cdi-registry.js';

/** What the requested CDI devices add to a container, ready for the spec builder. */
export interface CdiEdits {
  env: string[];
  devices: ResolvedDevice[];
  mounts: BindMountInput[];
  hooks: Hooks;
  additionalGids: number[];
}

const ANNOTATION_PREFIX = 'cdi.k8s.io/';

/** The devices a container asks for: the CRI field, then `cdi.k8s.io/` annotations (comma-separated), once each. */
export function requestedCdiDevices(config: Pick<cri.ContainerConfig__Output, 'CDI_devices' | 'annotations'>): string[] {
  const names = config.CDI_devices.map((d) => d.name);
  for (const [key, value] of Object.entries(config.annotations)) {
    if (key.startsWith(ANNOTATION_PREFIX)) names.push(...value.split(',').map((n) => n.trim()).filter(Boolean));
  }
  return [...new Set(names)];
}

async function deviceOf(node: CdiDeviceNode): Promise<ResolvedDevice> {
  const access = node.permissions ?? 'rwm';
  if (node.type && (node.type === 'p' || (node.major !== undefined && node.minor !== undefined))) {
    return {
      device: { type: node.type, path: node.path, major: node.major ?? 0, minor: node.minor ?? 0, fileMode: node.fileMode ?? 0o666, uid: node.uid ?? 0, gid: node.gid ?? 0 },
      access,
    };
  }
  const found = await resolveHostDevice(node.hostPath ?? node.path, node.path, access);
  for (const key of ['fileMode', 'uid', 'gid'] as const) if (node[key] !== undefined) found.device[key] = node[key];
  return found;
}

const FLAGS: ReadonlySet<string> = new Set(['noexec', 'nosuid', 'nodev']);

function mountOf(m: CdiMount): BindMountInput {
  const options = m.options ?? [];
  if (m.type !== undefined && m.type !== 'bind' && !options.includes('bind') && !options.includes('rbind')) {
    throw new CdiError(`mount ${m.containerPath} of type ${m.type}: only bind mounts are supported`);
  }
  const propagation: MountPropagation = options.includes('rshared') ? 'rshared' : options.includes('rslave') ? 'rslave' : 'private';
  return {
    containerPath: m.containerPath,
    hostPath: m.hostPath,
    readonly: options.includes('ro'),
    propagation,
    options: options.filter((o) => FLAGS.has(o)),
  };
}

function hookOf(h: { path: string; args?: string[]; env?: string[]; timeout?: number }): Hook {
  return { path: h.path, ...(h.args ? { args: h.args } : {}), ...(h.env ? { env: h.env } : {}), ...(h.timeout !== undefined ? { timeout: h.timeout } : {}) };
}

async function addEdits(out: CdiEdits, edits: CdiContainerEdits): Promise<void> {
  out.env.push(...(edits.env ?? []));
  for (const node of edits.deviceNodes ?? []) out.devices.push(await deviceOf(node));
  out.mounts.push(...(edits.mounts ?? []).map(mountOf));
  for (const h of edits.hooks ?? []) (out.hooks[h.hookName] ??= []).push(hookOf(h));
  out.additionalGids.push(...(edits.additionalGids ?? []));
}

/** The edits of each device and, once per spec file, of its spec; an error names device and file. */
export async function collectCdiEdits(devices: readonly ResolvedCdiDevice[]): Promise<CdiEdits> {
  const out: CdiEdits = { env: [], devices: [], mounts: [], hooks: {}, additionalGids: [] };
  const specsApplied = new Set<string>();
  for (const device of devices) {
    try {
      if (!specsApplied.has(device.file)) {
        specsApplied.add(device.file);
        await addEdits(out, device.specEdits);
      }
      await addEdits(out, device.deviceEdits);
    } catch (err) {
      throw new CdiError(`CDI device "${device.name}" (${device.file}): ${(err as Error).message}`);
    }
  }
  return out;
}

function envKey(entry: string): string {
  return entry.slice(0, entry.indexOf('='));
}

/** The container's spec input with the CDI edits applied: an env entry of a device replaces one of the same name. */
export function applyCdiEdits(input: ContainerSpecInput, edits: CdiEdits): ContainerSpecInput {
  if (edits.env.length + edits.devices.length + edits.mounts.length + edits.additionalGids.length === 0 && Object.keys(edits.hooks).length === 0) return input;
  const replaced = new Set(edits.env.map(envKey));
  const user = input.user && { ...input.user, additionalGids: [...new Set([...(input.user.additionalGids ?? []), ...edits.additionalGids])] };
  return {
    ...input,
    env: [...(input.env ?? []).filter((e) => !replaced.has(envKey(e))), ...edits.env],
    devices: [...(input.devices ?? []), ...edits.devices],
    mounts: [...(input.mounts ?? []), ...edits.mounts],
    ...(user ? { user } : {}),
    hooks: edits.hooks,
  };
}
