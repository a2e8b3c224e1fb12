import { watch, type FSWatcher } from 'node:fs';
import { loadDefaultNetwork, type CniNetworkConfig } from './config.js';

export type DefaultNetwork = { file: string; network: CniNetworkConfig } | undefined;
export type DefaultNetworkLoader = (confDir: string) => Promise<DefaultNetwork>;

/**
 * The default network of a CNI configuration directory, read once and kept while nothing in the
 * directory changes: RunPodSandbox and Status ask for it on every call, and reading the directory
 * and the file through the thread pool took 1-3 ms of a pod start under the kubelet. An inotify
 * watch on the directory (fs.watch) drops the copy at any change in it or to it, and is set again
 * at the next read; where none can be set (no directory yet), every call reads. A configuration
 * that cannot be read or parsed is never kept. Each caller gets its own copy.
 */
export class DefaultNetworkCache {
  private dir: string | undefined;
  private watcher: FSWatcher | undefined;
  private found: Promise<DefaultNetwork> | undefined;

  constructor(private readonly load: DefaultNetworkLoader = loadDefaultNetwork) {}

  get(confDir: string): Promise<DefaultNetwork> {
    if (confDir !== this.dir) {
      this.drop();
      this.dir = confDir;
    }
    if (this.found) return this.found.then(copyOf);
    // Watched before the read: a change made while it reads drops what it read.
    this.watcher ??= this.watch(confDir);
    const loading = this.load(confDir);
    if (this.watcher) {
      this.found = loading;
      loading.catch(() => {
        if (this.found === loading) this.found = undefined;
      });
    }
    return loading.then(copyOf);
  }

  /** Stops watching. */
  close(): void {
    this.drop();
  }

  private watch(dir: string): FSWatcher | undefined {
    try {
      const watcher = watch(dir, { persistent: false }, () => this.drop());
      watcher.on('error', () => this.drop());
      return watcher;
    } catch {
      return undefined;
    }
  }

  private drop(): void {
    this.found = undefined;
    this.watcher?.close();
    this.watcher = undefined;
  }
}

function copyOf(found: DefaultNetwork): DefaultNetwork {
  return found && structuredClone(found);
}

/** The daemon's one cache: it has one CNI configuration directory at a time. */
export const defaultNetworks = new DefaultNetworkCache();
