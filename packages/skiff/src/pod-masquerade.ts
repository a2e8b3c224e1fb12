import { errorMessage, runCommand, type Logger } from '@skiff/common/core';

/** The nat chain through which pods of Skiff's default network reach addresses beyond their subnet. */
export const POD_MASQUERADE_CHAIN = 'SKIFF-POD-MASQ';

/**
 * The chain as `iptables -t nat -S <chain>` prints it: traffic between pods and to multicast keeps
 * its source, the rest leaves with the host's address (what the bridge plugin's ipMasq does with
 * one chain per pod, created and removed on each pod's ADD and DEL).
 */
export function masqueradeChainRules(subnet: string): string[] {
  return [
    `-N ${POD_MASQUERADE_CHAIN}`,
    `-A ${POD_MASQUERADE_CHAIN} -d ${subnet} -j RETURN`,
    `-A ${POD_MASQUERADE_CHAIN} -d 224.0.0.0/4 -j RETURN`,
    `-A ${POD_MASQUERADE_CHAIN} -j MASQUERADE`,
  ];
}

/** The POSTROUTING rule that sends the subnet's traffic through the chain. */
export function masqueradeJumpRule(subnet: string): string {
  return `-A POSTROUTING -s ${subnet} -j ${POD_MASQUERADE_CHAIN}`;
}

async function iptables(args: string[]): Promise<string> {
  const result = await runCommand('iptables', ['-w', '5', '-t', 'nat', ...args], { timeoutMs: 15_000 });
  if (result.code !== 0) throw new Error(`iptables -t nat ${args.join(' ')} failed: ${result.stderr.trim()}`);
  return result.stdout;
}

function ruleLines(listing: string): string[] {
  return listing.split('\n').map((l) => l.trim()).filter(Boolean);
}

/**
 * Makes the nat table masquerade `subnet` through one chain and one POSTROUTING rule, both left as
 * they are when already right (a rule replaced while pods run would drop new connections made in
 * between), both rewritten when the subnet changed.
 */
export async function ensurePodMasquerade(subnet: string): Promise<void> {
  const wanted = masqueradeChainRules(subnet);
  const chain = await iptables(['-S', POD_MASQUERADE_CHAIN]).then(ruleLines, () => undefined);
  if (chain === undefined) await iptables(['-N', POD_MASQUERADE_CHAIN]);
  if (chain === undefined || chain.join('\n') !== wanted.join('\n')) {
    await iptables(['-F', POD_MASQUERADE_CHAIN]);
    for (const rule of wanted.slice(1)) await iptables(rule.split(' '));
  }
  const jump = masqueradeJumpRule(subnet);
  const jumps = ruleLines(await iptables(['-S', 'POSTROUTING'])).filter((l) => l.endsWith(`-j ${POD_MASQUERADE_CHAIN}`));
  for (const stale of jumps.filter((l) => l !== jump)) await iptables(['-D', ...stale.split(' ').slice(1)]);
  if (!jumps.includes(jump)) await iptables(jump.split(' '));
}

/**
 * The subnet to masquerade for Skiff's default network file, read from it: its bridge plugin with
 * the per-pod masquerade off (`ipMasq` false, as Skiff writes it) and the first range of its IPAM.
 * Undefined for a file that masquerades per pod itself, or is not a bridge network.
 */
export function defaultNetworkMasqueradeSubnet(conflist: string): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(conflist);
  } catch {
    return undefined;
  }
  const plugins = (parsed as { plugins?: unknown }).plugins;
  if (!Array.isArray(plugins)) return undefined;
  const bridge = plugins.find((p): p is Record<string, unknown> => typeof p === 'object' && p !== null && (p as { type?: unknown }).type === 'bridge');
  if (!bridge || bridge['ipMasq'] === true || bridge['isGateway'] !== true) return undefined;
  const ranges = (bridge['ipam'] as { ranges?: { subnet?: unknown }[][] } | undefined)?.ranges;
  const subnet = ranges?.[0]?.[0]?.subnet;
  return typeof subnet === 'string' && /^\d+\.\d+\.\d+\.\d+\/\d+$/.test(subnet) ? subnet : undefined;
}

/** Masquerades the default network's subnet when its file asks for it; a failure is logged, not fatal. */
export async function masqueradeDefaultNetwork(conflist: string, log: Logger): Promise<void> {
  const subnet = defaultNetworkMasqueradeSubnet(conflist);
  if (subnet === undefined) return;
  try {
    await ensurePodMasquerade(subnet);
  } catch (err) {
    log.error({ subnet, err: errorMessage(err) }, 'cannot set up the masquerade of the default pod network: pods reach nothing beyond this host');
  }
}
