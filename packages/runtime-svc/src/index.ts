export * from './oci/runtime-spec.js';
export {
  buildSpec,
  SpecError,
  DEFAULT_MASKED_PATHS,
  DEFAULT_READONLY_PATHS,
  DEFAULT_PATH_ENV,
  type ContainerSpecInput,
  type NamespaceMode,
  type NamespacesInput,
  type BindMountInput,
  type MountPropagation,
  type ResourcesInput,
  type SeccompInput,
  type ApparmorInput,
} from './oci/spec-builder.js';
export { readHostFacts, APPARMOR_DEFAULT_PROFILE, type HostFacts } from './oci/host-facts.js';
export { CAPABILITY_BITS, DEFAULT_CAPABILITIES, CapabilityError, normalizeCapability, resolveCapabilities } from './oci/capabilities.js';
export { runtimeDefaultSeccompProfile } from './oci/seccomp-default.js';
export { loadSeccompProfile, SeccompProfileError } from './oci/seccomp-localhost.js';
export { resolveHostDevice, listHostDevices, DeviceError, type ResolvedDevice } from './oci/devices.js';
export { Runc, RuncError, DEFAULT_RUNC_PATH, DEFAULT_RUNC_ROOT, type RuncOptions, type RuncState, type RuncStatus, type RuncStats } from './oci/runc.js';
export { stopContainer, StopTimeoutError, type StopOptions } from './oci/stop-container.js';

export {
  createContainerWithMonitor,
  containerMonitorArgs,
  removeMonitorFiles,
  ConmonError,
  DEFAULT_CONMON_PATH,
  type ContainerMonitorOptions,
  type MonitoredContainer,
  type LogDriver,
  type RuntimeBinary,
} from './conmon/conmon.js';
export { execSync, EXEC_TIMED_OUT_MESSAGE, type ExecSyncOptions, type ExecSyncResult } from './conmon/exec-sync.js';
export { exitFilePath, readExitCode, waitForExitCode, removeExitFile, wasOomKilled } from './conmon/exit-file.js';
export { parseCriLog, splitCriLogStreams, type CriLogRecord } from './conmon/cri-log.js';

export { NetnsManager, NetnsError, DEFAULT_NETNS_DIR, type NetnsEntry } from './cni/netns.js';
export { CniRunner, CniError, DEFAULT_CNI_BIN_DIRS, DEFAULT_CNI_CACHE_DIR, type Attachment, type PortMapping, type CniRunnerOptions } from './cni/cni.js';
export { loadDefaultNetwork, loadNetworkConfigFile, parseNetworkConfig, CniConfigError, type CniNetworkConfig, type CniPluginConfig } from './cni/config.js';
export { parseCniResult, podIpsFromResult, type CniResult, type PodIp } from './cni/result.js';
export {
  DEFAULT_BRIDGE_CONFLIST,
  DEFAULT_CONFLIST_FILE,
  DEFAULT_NETWORK_NAME,
  DEFAULT_BRIDGE,
  DEFAULT_SUBNET,
  LOOPBACK_NETWORK,
  bridgeNetworkConfig,
  chooseSubnet,
  cidrsOverlap,
  hostRoutes,
  type BridgeNetworkOptions,
} from './cni/default-network.js';

export { readJournal, journalMessage, type JournalEntry } from './journal/journald.js';
export { runCommand, CommandTimeoutError, type CommandResult, type RunCommandOptions } from './process/run-command.js';

export { openRuntime, packageVersion, type OpenRuntimeOptions } from './daemon/open-runtime.js';
export type { RuntimeContext, ImageReader } from './daemon/context.js';
export { RuntimePaths } from './daemon/paths.js';
export { runtimeServiceHandlers } from './server.js';
export { recoverState, type RecoveryReport } from './recovery/recover.js';
