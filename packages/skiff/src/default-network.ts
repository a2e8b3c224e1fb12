import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { masqueradeDefaultNetwork } from './pod-masquerade.js';
import { atomicWriteFile, DEFAULT_BRIDGE_CONFLIST, DEFAULT_CONFLIST_FILE, type Logger, type SkiffConfig } from '@skiff/common/core';

const CNI_CONFIG_FILE = /\.(conf|conflist|json)$/;

/**
 * Pods need a network: when the CNI config dir holds no configuration, install Skiff's bridge
 * network. Its pods are masqueraded by one nat rule for the subnet, set up here on every start
 * (iptables rules do not outlive a reboot), not by a chain per pod.
 */
export async function installDefaultNetwork(config: SkiffConfig, log: Logger): Promise<void> {
  const dir = config.runtime.cni_conf_dir;
  await fs.mkdir(dir, { recursive: true, mode: 0o755 });
  const existing = (await fs.readdir(dir)).filter((f) => CNI_CONFIG_FILE.test(f));
  const path = join(dir, DEFAULT_CONFLIST_FILE);
  if (existing.length === 0) {
    await atomicWriteFile(path, DEFAULT_BRIDGE_CONFLIST, 0o644);
    log.info({ path }, 'installed the default pod network (bridge + host-local + portmap)');
  }
  const conflist = await fs.readFile(path, 'utf8').catch(() => undefined);
  if (conflist !== undefined) await masqueradeDefaultNetwork(conflist, log);
}
