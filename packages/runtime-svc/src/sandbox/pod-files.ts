import { promises as fs } from 'node:fs';
import type { PodIp } from '../cni/result.js';
import type { SandboxPaths } from '../daemon/paths.js';
import type { SandboxRecord } from '../state/records.js';

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

/** hostname, hosts and resolv.conf of a pod, from its record (a pod on the host network gets the host's /etc/hosts). */
export async function writePodFiles(rec: SandboxRecord, paths: SandboxPaths): Promise<void> {
  const hostNetwork = rec.namespaces.network === 'NODE';
  await fs.writeFile(paths.hostname, `${rec.hostname}\n`, { mode: 0o644 });
  if (hostNetwork) await fs.copyFile('/etc/hosts', paths.hosts).catch(() => fs.writeFile(paths.hosts, renderHosts(rec.hostname, [])));
  else await fs.writeFile(paths.hosts, renderHosts(rec.hostname, rec.ips), { mode: 0o644 });
  if (hasDnsSettings(rec.dnsConfig)) await fs.writeFile(paths.resolvConf, renderResolvConf(rec.dnsConfig), { mode: 0o644 });
  else await fs.copyFile('/etc/resolv.conf', paths.resolvConf).catch(() => fs.writeFile(paths.resolvConf, ''));
  await fs.chmod(paths.hosts, 0o644);
  await fs.chmod(paths.resolvConf, 0o644);
}
