import { isIP } from 'node:net';
import { atomicWriteJson, readJsonIfExists } from '@skiff/common';

/** "10.0.0.0/24" or dual-stack "10.0.0.0/24,fd00::/64" as a list; throws on anything else. */
export function parsePodCidrs(value: string): string[] {
  const cidrs = value.split(',').map((c) => c.trim()).filter(Boolean);
  for (const cidr of cidrs) {
    const [address, prefix, extra] = cidr.split('/');
    const family = isIP(address ?? '');
    const bits = Number(prefix);
    if (extra !== undefined || family === 0 || prefix === undefined || !/^\d+$/.test(prefix) || bits > (family === 4 ? 32 : 128)) {
      throw new Error(`"${cidr}" is not a CIDR such as 10.244.1.0/24 or fd00:1::/64`);
    }
  }
  return cidrs;
}

/** Runtime-wide network settings the kubelet hands over with UpdateRuntimeConfig. */
export class NetworkSettings {
  private podCidrs: string[] = [];

  private constructor(private readonly file: string) {}

  static async load(file: string): Promise<NetworkSettings> {
    const settings = new NetworkSettings(file);
    const saved = await readJsonIfExists<{ podCidrs?: string[] }>(file);
    if (Array.isArray(saved?.podCidrs)) settings.podCidrs = saved.podCidrs.filter((c) => typeof c === 'string');
    return settings;
  }

  get cidrs(): readonly string[] {
    return this.podCidrs;
  }

  /** Keeps the pod CIDR ("a" or dual-stack "a,b"); an empty value leaves the current one. */
  async setPodCidr(value: string): Promise<boolean> {
    const cidrs = parsePodCidrs(value);
    if (cidrs.length === 0 || cidrs.join(',') === this.podCidrs.join(',')) return false;
    this.podCidrs = cidrs;
    await atomicWriteJson(this.file, { podCidrs: cidrs });
    return true;
  }

  /** The CNI ipRanges capability argument: one range set per CIDR. */
  ipRanges(): { subnet: string }[][] | undefined {
    return this.podCidrs.length === 0 ? undefined : this.podCidrs.map((subnet) => [{ subnet }]);
  }
}
