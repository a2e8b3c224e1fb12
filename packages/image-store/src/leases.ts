import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { atomicWriteJson, fsyncDir, errnoCode, replaceFileNow } from '@skiff/common';
import { sha256Hex } from './digests.js';
import { StoreError } from './errors.js';

/**
 * Leases keep image content alive while something outside the store uses it: runtime-svc takes one
 * per container for the snapshots its root filesystem is stacked on, so removing the image (or a
 * garbage collection) never deletes a lower dir under a live overlay mount. Each lease is its own
 * file, written atomically by the process that holds it; only the writer's GC reads them all.
 * A lease written with `writeNow` is seen at once and on disk later: after a crash of the machine
 * in between, its file may be left empty or cut short. Such a lease protects nothing and is listed
 * with no image (its holder waited for it to be on disk before depending on it, so nothing does).
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
    const path = await this.prepare(lease);
    await atomicWriteJson(path, lease, 0o600);
  }

  /** Writes the lease so that it holds from the moment this resolves; `durable`: once it is on disk. */
  async writeNow(lease: Lease): Promise<{ durable: Promise<void> }> {
    const path = await this.prepare(lease);
    return replaceFileNow(path, JSON.stringify(lease), 0o600);
  }

  private async prepare(lease: Lease): Promise<string> {
    for (const chainId of lease.chainIds) sha256Hex(chainId, 'layer chain ID');
    const path = this.path(lease.holder);
    await fs.mkdir(this.dir, { recursive: true, mode: 0o700 });
    return path;
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
      let text: string;
      try {
        text = await fs.readFile(join(this.dir, name), 'utf8');
      } catch (err) {
        if (errnoCode(err) === 'ENOENT') continue;
        throw err;
      }
      leases.push(parseLease(name.slice(0, -'.json'.length), text));
    }
    return leases;
  }
}

/** A lease file's content; one cut short by a crash (see LeaseDirectory) holds nothing. */
function parseLease(holder: string, text: string): Lease {
  try {
    const lease = JSON.parse(text) as Lease;
    if (typeof lease.holder === 'string' && typeof lease.imageId === 'string' && Array.isArray(lease.chainIds)) return lease;
  } catch {
    // Cut short.
  }
  return { holder, imageId: '', chainIds: [] };
}
