import { runCommand } from './run-command.js';

/** One plugin's entry in a network configuration list; all other keys pass to the plugin as-is. */
export interface CniPluginConfig {
  type: string;
  /** Capability arguments the plugin accepts through runtimeConfig (e.g. portMappings). */
  capabilities?: Record<string, boolean>;
  [key: string]: unknown;
}

/** A network configuration (a .conflist, or a single-plugin .conf lifted into one). */
export interface CniNetworkConfig {
  cniVersion: string;
  name: string;
  disableCheck?: boolean;
  plugins: CniPluginConfig[];
}

export const DEFAULT_NETWORK_NAME = 'skiff';
export const DEFAULT_BRIDGE = 'skiff0';
export const DEFAULT_SUBNET = '10.88.0.0/16';
/** The file name `skiff up` installs the default network under (sorts before most others). */
export const DEFAULT_CONFLIST_FILE = '10-skiff.conflist';

/** Tried in order when the default subnet is already routed on the host. */
export const FALLBACK_SUBNETS: readonly string[] = ['10.88.0.0/16', '10.89.0.0/16', '10.90.0.0/16', '172.30.0.0/16', '192.168.230.0/24'];

export interface BridgeNetworkOptions {
  name?: string;
  bridge?: string;
  /** An IPv4 CIDR; the first host address is the bridge's (the pods' gateway). */
  subnet?: string;
  /** host-local's allocation store; the plugin's default (/var/lib/cni/networks) otherwise. */
  ipamDataDir?: string;
}

function parseIpv4(ip: string): number {
  const parts = ip.split('.').map((p) => Number.parseInt(p, 10));
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) throw new Error(`"${ip}" is not an IPv4 address`);
  return ((parts[0]! << 24) | (parts[1]! << 16) | (parts[2]! << 8) | parts[3]!) >>> 0;
}

function formatIpv4(n: number): string {
  return [24, 16, 8, 0].map((s) => (n >>> s) & 255).join('.');
}

/** Start address and prefix length of an IPv4 CIDR; "default" is 0.0.0.0/0. */
export function parseCidr(cidr: string): { base: number; prefix: number } {
  if (cidr === 'default') return { base: 0, prefix: 0 };
  const [ip, len] = cidr.split('/');
  const prefix = len === undefined ? 32 : Number.parseInt(len, 10);
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > 32) throw new Error(`"${cidr}" has an invalid prefix length`);
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  return { base: (parseIpv4(ip ?? '') & mask) >>> 0, prefix };
}

export function cidrsOverlap(a: string, b: string): boolean {
  const x = parseCidr(a);
  const y = parseCidr(b);
  const prefix = Math.min(x.prefix, y.prefix);
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  return ((x.base & mask) >>> 0) === ((y.base & mask) >>> 0);
}

/** The bridge network pods join by default: bridge + host-local IPAM, then portmap for hostPorts. */
export function bridgeNetworkConfig(options: BridgeNetworkOptions = {}): CniNetworkConfig {
  const subnet = options.subnet ?? DEFAULT_SUBNET;
  const { base, prefix } = parseCidr(subnet);
  if (prefix > 30) throw new Error(`subnet ${subnet} is too small for pods`);
  const ipam: Record<string, unknown> = {
    type: 'host-local',
    ranges: [[{ subnet: `${formatIpv4(base)}/${prefix}`, gateway: formatIpv4(base + 1) }]],
    routes: [{ dst: '0.0.0.0/0' }],
  };
  if (options.ipamDataDir) ipam['dataDir'] = options.ipamDataDir;
  return {
    cniVersion: '1.0.0',
    name: options.name ?? DEFAULT_NETWORK_NAME,
    plugins: [
      { type: 'bridge', bridge: options.bridge ?? DEFAULT_BRIDGE, isGateway: true, ipMasq: false, hairpinMode: true, ipam },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  };
}

/** The default network as `skiff up` writes it to the CNI configuration directory. */
export const DEFAULT_BRIDGE_CONFLIST: string = `${JSON.stringify(bridgeNetworkConfig(), null, 2)}\n`;

/**
 * The loopback network. The loopback plugin brings up the interface named by CNI_IFNAME, so it
 * runs as its own attachment with ifName "lo" rather than as a link in the bridge chain.
 */
export const LOOPBACK_NETWORK: CniNetworkConfig = {
  cniVersion: '1.0.0',
  name: 'skiff-loopback',
  plugins: [{ type: 'loopback' }],
};

/** Destinations of the host's IPv4 routes (main table), from `ip -j -4 route`. */
export async function hostRoutes(): Promise<{ dst: string; dev?: string }[]> {
  const result = await runCommand('ip', ['-j', '-4', 'route', 'show'], { timeoutMs: 10_000 });
  if (result.code !== 0) throw new Error(`ip route failed: ${result.stderr.trim()}`);
  return (JSON.parse(result.stdout || '[]') as { dst: string; dev?: string }[]).filter((r) => typeof r.dst === 'string');
}

/**
 * The first candidate subnet no host route overlaps (the default route aside, and routes on
 * `ownBridge`, which are the pods' own). Undefined when all collide.
 */
export function chooseSubnet(routes: readonly { dst: string; dev?: string }[], candidates: readonly string[] = FALLBACK_SUBNETS, ownBridge = DEFAULT_BRIDGE): string | undefined {
  const relevant = routes.filter((r) => r.dst !== 'default' && r.dev !== ownBridge);
  return candidates.find((c) => !relevant.some((r) => cidrsOverlap(c, r.dst)));
}
