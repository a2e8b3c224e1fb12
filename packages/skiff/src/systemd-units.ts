import type { ServiceSpec } from './services.js';

/** What a unit file needs that the machine decides. */
export interface UnitInputs {
  node: string;
  /** The configuration file the services read. */
  configPath: string;
}

const TARGET = 'skiff.target';

export function unitName(service: string): string {
  return `skiff-${service}.service`;
}

/**
 * A service's unit: readiness is notified only once its socket listens (Type=notify; the daemon
 * runs systemd-notify itself), runtime-svc gets its cgroup subtree delegated, and a restart ends
 * only the daemon's own process (KillMode=process): containers are conmon's children and run on.
 * Restarts back off as `skiff up` does; output goes to the journal.
 */
export function serviceUnit(spec: ServiceSpec, inputs: UnitInputs): string {
  const runtime = spec.name === 'runtime-svc';
  const after = runtime ? ['network-online.target', unitName('image-svc')] : spec.name === 'logs-svc' ? [unitName('runtime-svc')] : ['network-online.target'];
  return [
    '[Unit]',
    `Description=Skiff ${spec.name}`,
    `PartOf=${TARGET}`,
    `After=${after.join(' ')}`,
    'Wants=network-online.target',
    'StartLimitIntervalSec=60',
    'StartLimitBurst=10',
    '',
    '[Service]',
    'Type=notify',
    'NotifyAccess=all',
    ...Object.entries(spec.environment ?? {}).map(([name, value]) => `Environment=${name}=${value}`),
    `ExecStart=${inputs.node} ${(spec.nodeOptions ?? []).join(' ')} ${spec.entry} --config ${inputs.configPath}`.replace(/ {2,}/g, ' '),
    'Restart=always',
    'RestartSec=1',
    'KillMode=process',
    ...(runtime ? ['Delegate=yes', 'OOMScoreAdjust=-999'] : []),
    'StandardOutput=journal',
    'StandardError=journal',
    'LimitNOFILE=1048576',
    '',
    '[Install]',
    `WantedBy=${TARGET}`,
    '',
  ].join('\n');
}

/** The target that starts all four services. */
export function targetUnit(services: readonly ServiceSpec[]): string {
  return ['[Unit]', 'Description=Skiff container runtime (all services)', `Wants=${services.map((s) => unitName(s.name)).join(' ')}`, '', '[Install]', 'WantedBy=multi-user.target', ''].join('\n');
}

/** Every unit file, by name. */
export function skiffUnits(services: readonly ServiceSpec[], inputs: UnitInputs): Map<string, string> {
  return new Map([...services.map((s): [string, string] => [unitName(s.name), serviceUnit(s, inputs)]), [TARGET, targetUnit(services)]]);
}
