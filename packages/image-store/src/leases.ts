import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { atomicWriteJson, fsyncDir, errnoCode } from '@skiff/common';
import { sha256Hex } from './digests.js';
import { StoreError } from './errors.js';

/**
 * Leases keep image content alive while something outside the store uses it: runtime-svc takes one
 * per container for the snapshots its root filesystem is stacked on, so removing the image (or a
 * garbage collection) never deletes a lower dir under a live overlay mount. Each lease is its own
 * file, written atomically by the process that holds it; only the writer's GC reads them all.
 */
export interface Lease {
  holder: string;
  imageId: string;
  chainIds: string[];
}

const HOLDER = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

export class LeaseDirectory {
  constructor(private readonly dir: string) {}

  private path(holder: string): string {
    if (!HOLDER.test(holder)) throw new StoreError('unsafe-path', `lease holder ${JSON.stringify(holder)} must be 1-128 letters, digits, '_', '.' or '-'`);
    return join(this.dir, `${holder}.json`);
  }

  async write(lease: Lease): Promise<void> {
    for (const chainId of lease.chainIds) sha256Hex(chainId, 'layer chain ID');
    const path = this.path(lease.holder);
    await fs.mkdir(this.dir, { recursive: true, mode: 0o700 });
    await atomicWriteJson(path, lease, 0o600);
  }

  async remove(holder: string): Promise<void> {
    await fs.rm(this.path(holder), { force: true });
    await fsyncDir(this.dir).catch(() => undefined);
  }

  async list(): Promise<Lease[]> {
    let names: string[];
    try {
      names = await fs.readdir(this.dir);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return [];
      throw err;
    }
    const leases: Lease[] = [];
    for (const name of names) {
      if (!name.endsWith('.json') || name.startsWith('.')) continue;
      try {
        leases.push(JSON.parse(await fs.readFile(join(this.dir, name), 'utf8')) as Lease);
      } catch (err) {
        if (errnoCode(err) !== 'ENOENT') throw err;
      }
    }
    return leases;
  }
}
