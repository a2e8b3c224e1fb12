import type { cri, nri } from '@skiff/proto';

/** An update asks for something UpdateContainerResources cannot change. */
export class NriUpdateUnsupportedError extends Error {}

const NO_RESOURCES: cri.LinuxContainerResources__Output = {
  cpu_period: '0',
  cpu_quota: '0',
  cpu_shares: '0',
  memory_limit_in_bytes: '0',
  oom_score_adj: '0',
  cpuset_cpus: '',
  cpuset_mems: '',
  hugepage_limits: [],
  unified: {},
  memory_swap_limit_in_bytes: '0',
};

/**
 * A plugin's update of a container's resources as the CRI resources UpdateContainerResources
 * applies: the fields the plugin sets replace the container's current ones, the rest stay. What
 * the CRI's resources cannot carry is refused, never dropped.
 */
export function updatedCriResources(current: cri.LinuxContainerResources__Output | null, update: nri.LinuxResources__Output): cri.LinuxContainerResources__Output {
  const unsupported = unsupportedFields(update);
  if (unsupported.length > 0) throw new NriUpdateUnsupportedError(`Skiff cannot update ${unsupported.join(', ')} of a container`);
  const out: cri.LinuxContainerResources__Output = { ...NO_RESOURCES, ...current, hugepage_limits: [...(current?.hugepage_limits ?? [])], unified: { ...current?.unified } };
  const { memory, cpu } = update;
  if (memory?.limit) out.memory_limit_in_bytes = memory.limit.value;
  if (memory?.swap) out.memory_swap_limit_in_bytes = memory.swap.value;
  if (cpu?.shares) out.cpu_shares = cpu.shares.value;
  if (cpu?.quota) out.cpu_quota = cpu.quota.value;
  if (cpu?.period) out.cpu_period = cpu.period.value;
  if (cpu?.cpus) out.cpuset_cpus = cpu.cpus;
  if (cpu?.mems) out.cpuset_mems = cpu.mems;
  for (const limit of update.hugepage_limits) {
    out.hugepage_limits = [...out.hugepage_limits.filter((h) => h.page_size !== limit.page_size), { page_size: limit.page_size, limit: limit.limit }];
  }
  Object.assign(out.unified, update.unified);
  return out;
}

function unsupportedFields(update: nri.LinuxResources__Output): string[] {
  const { memory, cpu } = update;
  const fields: [string, unknown][] = [
    ['the memory reservation', memory?.reservation],
    ['the memory swappiness', memory?.swappiness],
    ['the OOM killer setting', memory?.disable_oom_killer],
    ['kernel memory limits', memory?.kernel ?? memory?.kernel_tcp],
    ['the memory hierarchy setting', memory?.use_hierarchy],
    ['the CPU realtime runtime', cpu?.realtime_runtime],
    ['the CPU realtime period', cpu?.realtime_period],
    ['the block I/O class', update.blockio_class],
    ['the RDT class', update.rdt_class],
    ['the device cgroup rules', update.devices.length > 0 ? update.devices : null],
    ['the pids limit', update.pids],
  ];
  return fields.filter(([, value]) => value !== null && value !== undefined).map(([name]) => name);
}
