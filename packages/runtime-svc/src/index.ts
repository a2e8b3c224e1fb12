// What other packages use of runtime-svc: the default pod network, and the pieces the shared test
// helpers drive directly (runc, network namespaces, commands). The daemon itself starts from main.ts.
export { Runc, RuncError, DEFAULT_RUNC_PATH, DEFAULT_RUNC_ROOT, type RuncOptions, type RuncState, type RuncStatus } from './oci/runc.js';

export { NetnsManager, NetnsError, DEFAULT_NETNS_DIR, type NetnsEntry } from './cni/netns.js';
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

export { runCommand, CommandTimeoutError, type CommandResult, type RunCommandOptions } from './process/run-command.js';
