/** A plugin's success result (CNI 0.3.0 and later; older ip4/ip6 results are read too). */
export interface CniResult {
  cniVersion: string;
  interfaces?: { name: string; mac?: string; sandbox?: string }[];
  ips?: { address: string; gateway?: string; interface?: number; version?: string }[];
  routes?: { dst: string; gw?: string }[];
  dns?: { nameservers?: string[]; domain?: string; search?: string[]; options?: string[] };
  [key: string]: unknown;
}

export interface PodIp {
  /** The address without its prefix length: "10.88.0.5". */
  ip: string;
  /** As the plugin reported it: "10.88.0.5/16". */
  cidr: string;
  gateway?: string;
  family: 4 | 6;
  /** Name of the interface it belongs to, when the result says. */
  interfaceName?: string;
}

export function parseCniResult(text: string): CniResult {
  const parsed = JSON.parse(text) as Record<string, unknown>;
  // Pre-0.3.0 results carry ip4/ip6 objects; lift them into the ips list.
  if (!Array.isArray(parsed['ips'])) {
    const ips: NonNullable<CniResult['ips']> = [];
    for (const key of ['ip4', 'ip6']) {
      const v = parsed[key] as { ip?: string; gateway?: string } | undefined;
      if (v?.ip) ips.push({ address: v.ip, ...(v.gateway ? { gateway: v.gateway } : {}) });
    }
    if (ips.length > 0) parsed['ips'] = ips;
  }
  return parsed as CniResult;
}

/** The pod's addresses in a final result, IPv4 first, skipping loopback addresses. */
export function podIpsFromResult(result: CniResult): PodIp[] {
  const out: PodIp[] = [];
  for (const entry of result.ips ?? []) {
    const ip = entry.address.split('/')[0] ?? '';
    if (!ip || ip.startsWith('127.') || ip === '::1') continue;
    const family = ip.includes(':') ? 6 : 4;
    const iface = entry.interface !== undefined ? result.interfaces?.[entry.interface]?.name : undefined;
    out.push({
      ip,
      cidr: entry.address,
      family,
      ...(entry.gateway ? { gateway: entry.gateway } : {}),
      ...(iface ? { interfaceName: iface } : {}),
    });
  }
  return out.sort((a, b) => a.family - b.family);
}
