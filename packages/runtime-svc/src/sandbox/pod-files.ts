import type { PodIp } from '../cni/result.js';

export interface DnsSettings {
  servers: readonly string[];
  searches: readonly string[];
  options: readonly string[];
}

export function hasDnsSettings(dns: DnsSettings): boolean {
  return dns.servers.length > 0 || dns.searches.length > 0 || dns.options.length > 0;
}

/** resolv.conf from the pod's DNS settings. */
export function renderResolvConf(dns: DnsSettings): string {
  const lines: string[] = [];
  if (dns.searches.length > 0) lines.push(`search ${dns.searches.join(' ')}`);
  for (const server of dns.servers) lines.push(`nameserver ${server}`);
  if (dns.options.length > 0) lines.push(`options ${dns.options.join(' ')}`);
  return `${lines.join('\n')}\n`;
}

/** /etc/hosts for a pod with a network namespace of its own: loopback names plus the pod's addresses. */
export function renderHosts(hostname: string, ips: readonly PodIp[]): string {
  const lines = [
    '127.0.0.1\tlocalhost',
    '::1\tlocalhost ip6-localhost ip6-loopback',
    'fe00::0\tip6-localnet',
    'fe00::0\tip6-mcastprefix',
    'fe00::1\tip6-allnodes',
    'fe00::2\tip6-allrouters',
  ];
  if (hostname) for (const ip of ips) lines.push(`${ip.ip}\t${hostname}`);
  return `${lines.join('\n')}\n`;
}
