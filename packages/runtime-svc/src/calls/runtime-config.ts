// CRI RuntimeService.RuntimeConfig
import type { cri } from '@skiff/proto';
import type { RuntimeContext } from '../daemon/context.js';

export function runtimeConfigCall(ctx: RuntimeContext): cri.RuntimeConfigResponse {
  return { linux: { cgroup_driver: ctx.cgroupDriver === 'systemd' ? 'SYSTEMD' : 'CGROUPFS' } };
}
