import { promises as fs } from 'node:fs';
import type { PodIp } from '../cni/result.js';
import { allSettledOrThrow } from '../util/settle.js';
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

/** Writes a file readable by all, whatever the umask (`mode` applies only to a file it creates). */
async function writePublicFile(path: string, content: string): Promise<void> {
  await fs.writeFile(path, content, { mode: 0o644 });
  await fs.chmod(path, 0o644);
}

async function copyPublicFile(from: string, to: string, fallback: string): Promise<void> {
  await fs.copyFile(from, to).catch(() => fs.writeFile(to, fallback));
  await fs.chmod(to, 0o644);
}

/**
 * The pod files that do not depend on its addresses: hostname and resolv.conf, and hosts for a pod
 * on the host network (the host's /etc/hosts). They can be written while the network is set up.
 */
export async function writePodFilesBeforeNetwork(rec: SandboxRecord, paths: SandboxPaths): Promise<void> {
  await allSettledOrThrow([
    writePublicFile(paths.hostname, `${rec.hostname}\n`),
    hasDnsSettings(rec.dnsConfig) ? writePublicFile(paths.resolvConf, renderResolvConf(rec.dnsConfig)) : copyPublicFile('/etc/resolv.conf', paths.resolvConf, ''),
    rec.namespaces.network === 'NODE' ? copyPublicFile('/etc/hosts', paths.hosts, renderHosts(rec.hostname, [])) : undefined,
  ]);
}

/** hosts of a pod with a network namespace of its own: loopback names and its addresses. */
export async function writeHostsFile(rec: SandboxRecord, paths: SandboxPaths, ips: readonly PodIp[]): Promise<void> {
  await writePublicFile(paths.hosts, renderHosts(rec.hostname, ips));
}
