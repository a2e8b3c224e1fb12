import * as fsSync from 'node:fs';
import { constants, promises as fs } from 'node:fs';
import type { Stats } from 'node:fs';
import { StoreError } from '../errors.js';
import type { TarEntry } from '../tar/tar-reader.js';
import { ancestorsOf, entryComponents, isWithin, joinComponents, parentOf } from './entry-path.js';
import { lookupInLowerLayers } from './lower-lookup.js';
import { FileAppender } from './file-writer.js';
import type { EarlyWriteback } from '../writeback.js';
import { createSpecialFiles, type SpecialFile } from './special-files.js';
import { OPAQUE_XATTR, applyXattrs, readXattrs, type XattrAssignment } from './xattrs.js';

const WHITEOUT_PREFIX = '.wh.';
const OPAQUE_MARKER = '.wh..wh..opq';
/** Other ".wh..wh." names are aufs bookkeeping (e.g. ".wh..wh.plnk"), not content. */
const AUFS_META_PREFIX = '.wh..wh.';

const CREATE_FILE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
const ASYNC_WRITE_THRESHOLD = 1024 * 1024;

function writeAllSync(fd: number, chunk: Buffer): void {
  let offset = 0;
  while (offset < chunk.length) offset += fsSync.writeSync(fd, chunk, offset, chunk.length - offset);
}

/** One inode's apparent size; hard links share the object so it is counted once. */
interface Inode {
  size: number;
}

/**
 * What this layer has put at each relative path so far. Nothing else writes into the tree being
 * built, so this map is an exact picture of it, and parent checks need no lstat calls.
 */
type PathState =
  | { kind: 'dir'; opaque: boolean; mode?: number; mtime?: number }
  | { kind: 'file' | 'symlink' | 'device'; inode: Inode; copiedUp?: boolean }
  | { kind: 'pending-node'; node: SpecialFile; uid: number; gid: number; mtime: number }
  | { kind: 'whiteout' }
  | { kind: 'pending-link'; target: string; entry: string };

export interface LayerExtractorOptions {
  /**
   * The fs/ dirs of the layers below, top first. Only called when the layer hard-links to a file it
   * does not contain itself.
   */
  lowerDirs: () => Promise<string[]>;
  /** When set, files of ASYNC_WRITE_THRESHOLD bytes or more are handed to it once written (it may write them out early). */
  writeback?: EarlyWriteback | undefined;
}

export interface ExtractedLayerStats {
  size: number;
  inodes: number;
}

function describe(state: PathState): string {
  switch (state.kind) {
    case 'dir':
      return 'a directory';
    case 'file':
      return 'a regular file';
    case 'symlink':
      return 'a symbolic link';
    case 'device':
    case 'pending-node':
      return 'a device node or FIFO';
    case 'whiteout':
      return 'a whiteout';
    case 'pending-link':
      return 'a hard link';
  }
}

function filteredXattrs(xattrs: Map<string, Buffer>): [Map<string, Buffer>, number] {
  const kept = new Map<string, Buffer>();
  let dropped = 0;
  for (const [name, value] of xattrs) {
    // overlayfs's own attributes (redirect, metacopy, opaque, ...) would change how the stack
    // resolves paths; only the whiteout conversion below may set them.
    if (name.startsWith('trusted.overlay.') || name.startsWith('user.overlay.')) dropped++;
    else kept.set(name, value);
  }
  return [kept, dropped];
}

function majorOf(rdev: number): number {
  return Number(((BigInt(rdev) >> 8n) & 0xfffn) | ((BigInt(rdev) >> 32n) & ~0xfffn));
}

function minorOf(rdev: number): number {
  return Number((BigInt(rdev) & 0xffn) | ((BigInt(rdev) >> 12n) & ~0xffn));
}

/**
 * Applies tar entries to an empty directory in overlayfs lower-dir form: whiteouts become 0/0
 * character devices, opaque markers become trusted.overlay.opaque=y. Entries that would escape
 * the directory, or reach through a symlink or non-directory, fail the layer.
 *
 * File system calls on the per-entry path are synchronous on purpose: a layer has tens of
 * thousands of small entries, and a thread-pool round trip for each of their half-dozen calls
 * made unpacking several times slower than the download. Each call blocks for microseconds, and
 * the event loop still runs between chunks of the archive.
 */
export class LayerExtractor {
  private readonly states = new Map<string, PathState>([['', { kind: 'dir', opaque: false }]]);
  private readonly xattrs = new Map<string, Map<string, Buffer>>();
  /** Overlay attributes found in the archive and not applied. */
  droppedXattrs = 0;
  /** Hard links into lower layers this layer resolved by copying the lower file in (0: the tree is the same under any parent). */
  lowerLinks = 0;
  private finished = false;

  constructor(
    private readonly root: string,
    private readonly options: LayerExtractorOptions,
  ) {}

  private absolute(path: string): string {
    return path === '' ? this.root : `${this.root}/${path}`;
  }

  async apply(entry: TarEntry, content: AsyncIterable<Buffer>): Promise<void> {
    if (this.finished) throw new Error('layer extractor already finished');
    const components = entryComponents(entry.path, entry.path);
    const path = joinComponents(components);
    const name = components[components.length - 1];

    if (name === OPAQUE_MARKER) return this.markOpaque(parentOf(path), entry.path);
    if (components.some((c) => c.startsWith(AUFS_META_PREFIX))) return;
    if (name !== undefined && name.startsWith(WHITEOUT_PREFIX)) return this.whiteout(parentOf(path), name.slice(WHITEOUT_PREFIX.length), entry.path);

    if (path === '') {
      if (entry.type !== 'directory') {
        throw new StoreError('unsafe-path', `layer entry ${JSON.stringify(entry.path)} would replace the layer root with a ${entry.type}`);
      }
      return this.directory('', entry);
    }

    this.ensureParents(path, entry.path);
    switch (entry.type) {
      case 'directory':
        return this.directory(path, entry);
      case 'file':
        return this.regularFile(path, entry, content);
      case 'symlink':
        return this.symlink(path, entry);
      case 'hardlink':
        return this.hardlink(path, entry);
      case 'char-device':
      case 'block-device':
      case 'fifo':
        return this.specialFile(path, entry);
    }
  }

  /** Creates missing ancestors; refuses any ancestor that is not a directory of this layer. */
  private ensureParents(path: string, entry: string): void {
    for (const ancestor of ancestorsOf(path)) {
      const state = this.states.get(ancestor);
      if (state?.kind === 'dir') continue;
      if (state === undefined || state.kind === 'whiteout') {
        // Recreating a name this layer whited out hides the lower content, as overlayfs does.
        fsSync.mkdirSync(this.absolute(ancestor), 0o755);
        this.states.set(ancestor, { kind: 'dir', opaque: state?.kind === 'whiteout' });
        continue;
      }
      throw new StoreError('unsafe-path', `layer entry ${JSON.stringify(entry)} lies under ${JSON.stringify(ancestor)}, which is ${describe(state)}, not a directory`);
    }
  }

  /** Removes whatever this layer put at `path` (with all descendants), so a new entry can take it. */
  private clear(path: string): void {
    const state = this.states.get(path);
    if (!state) return;
    if (state.kind === 'dir') {
      fsSync.rmSync(this.absolute(path), { recursive: true, force: true });
      const prefix = `${path}/`;
      for (const key of this.states.keys()) if (key.startsWith(prefix)) this.states.delete(key);
      for (const key of this.xattrs.keys()) if (key.startsWith(prefix)) this.xattrs.delete(key);
    } else if (state.kind === 'file' || state.kind === 'symlink' || state.kind === 'device') {
      fsSync.unlinkSync(this.absolute(path));
    }
    this.states.delete(path);
    this.xattrs.delete(path);
  }

  private recordXattrs(path: string, xattrs: Map<string, Buffer>): void {
    const [kept, dropped] = filteredXattrs(xattrs);
    this.droppedXattrs += dropped;
    if (kept.size > 0) this.xattrs.set(path, kept);
    else this.xattrs.delete(path);
  }

  private markOpaque(dir: string, entry: string): void {
    if (dir !== '') this.ensureParents(`${dir}/${OPAQUE_MARKER}`, entry);
    const state = this.states.get(dir);
    if (state?.kind !== 'dir') throw new Error(`internal: ${dir} is not a directory`);
    state.opaque = true;
  }

  private whiteout(dir: string, name: string, entry: string): void {
    if (name === '' || name === '.' || name === '..') {
      throw new StoreError('unsafe-path', `layer entry ${JSON.stringify(entry)} is a whiteout for an invalid name`);
    }
    const path = dir === '' ? name : `${dir}/${name}`;
    this.ensureParents(path, entry);
    const existing = this.states.get(path);
    if (existing === undefined) this.states.set(path, { kind: 'whiteout' });
    // A directory this layer also creates replaces the lower one entirely.
    else if (existing.kind === 'dir') existing.opaque = true;
    // Anything else this layer put there already hides the lower file.
  }

  private directory(path: string, entry: TarEntry): void {
    const existing = this.states.get(path);
    if (existing?.kind === 'dir') {
      existing.mode = entry.mode;
      existing.mtime = entry.mtime;
      fsSync.lchownSync(this.absolute(path), entry.uid, entry.gid);
    } else {
      this.clear(path);
      fsSync.mkdirSync(this.absolute(path), 0o700);
      fsSync.lchownSync(this.absolute(path), entry.uid, entry.gid);
      this.states.set(path, { kind: 'dir', opaque: existing?.kind === 'whiteout', mode: entry.mode, mtime: entry.mtime });
    }
    this.recordXattrs(path, entry.xattrs);
  }

  private async regularFile(path: string, entry: TarEntry, content: AsyncIterable<Buffer>): Promise<void> {
    this.clear(path);
    const fd = fsSync.openSync(this.absolute(path), CREATE_FILE_FLAGS, 0o600);
    // Registered before writing so a failure part-way still lets clear() find it.
    this.states.set(path, { kind: 'file', inode: { size: entry.size } });
    // Big files are written from the thread pool, queued, so copying their data into the page
    // cache runs on another core while this thread parses and hashes.
    const appender = entry.size >= ASYNC_WRITE_THRESHOLD ? new FileAppender(fd) : undefined;
    try {
      if (appender) {
        for await (const chunk of content) await appender.write(chunk);
        await appender.flush();
      } else {
        for await (const chunk of content) writeAllSync(fd, chunk);
      }
      fsSync.fchownSync(fd, entry.uid, entry.gid);
      // After chown, which clears setuid/setgid.
      fsSync.fchmodSync(fd, entry.mode);
      fsSync.futimesSync(fd, entry.mtime, entry.mtime);
    } catch (err) {
      // Queued writes must end before the descriptor is closed (and its number reused).
      await appender?.flush().catch(() => undefined);
      fsSync.closeSync(fd);
      throw err;
    }
    if (appender && this.options.writeback?.takes(entry.size)) this.options.writeback.submit(fd, entry.size, () => fsSync.closeSync(fd));
    else fsSync.closeSync(fd);
    this.recordXattrs(path, entry.xattrs);
  }

  private symlink(path: string, entry: TarEntry): void {
    this.clear(path);
    const absolute = this.absolute(path);
    fsSync.symlinkSync(entry.linkTarget, absolute);
    this.states.set(path, { kind: 'symlink', inode: { size: Buffer.byteLength(entry.linkTarget) } });
    fsSync.lchownSync(absolute, entry.uid, entry.gid);
    fsSync.lutimesSync(absolute, entry.mtime, entry.mtime);
    this.recordXattrs(path, entry.xattrs);
  }

  private specialFile(path: string, entry: TarEntry): void {
    this.clear(path);
    const kind = entry.type === 'fifo' ? 'fifo' : entry.type === 'char-device' ? 'char-device' : 'block-device';
    this.states.set(path, {
      kind: 'pending-node',
      node: { path, kind, major: entry.devMajor, minor: entry.devMinor, mode: entry.mode },
      uid: entry.uid,
      gid: entry.gid,
      mtime: entry.mtime,
    });
    this.recordXattrs(path, entry.xattrs);
  }

  private hardlink(path: string, entry: TarEntry): void {
    const target = joinComponents(entryComponents(entry.linkTarget, entry.path, 'hard link target'));
    if (target === path) return;
    if (target === '' || isWithin(target, path)) {
      throw new StoreError('bad-layer', `layer entry ${JSON.stringify(entry.path)} is a hard link to ${JSON.stringify(entry.linkTarget)}, which is the entry itself or lies under it`);
    }
    const targetState = this.states.get(target);
    if (targetState === undefined) {
      // Not in this layer: it must come from a lower one. The path to it must not pass through
      // anything but directories of this layer (or names this layer does not touch).
      for (const ancestor of ancestorsOf(target)) {
        const state = this.states.get(ancestor);
        if (state !== undefined && state.kind !== 'dir' && state.kind !== 'whiteout') {
          throw new StoreError('unsafe-path', `layer entry ${JSON.stringify(entry.path)} is a hard link whose target ${JSON.stringify(entry.linkTarget)} goes through ${JSON.stringify(ancestor)}, which is ${describe(state)}`);
        }
      }
      this.clear(path);
      this.states.set(path, { kind: 'pending-link', target, entry: entry.path });
      return;
    }
    switch (targetState.kind) {
      case 'dir':
        throw new StoreError('bad-layer', `layer entry ${JSON.stringify(entry.path)} is a hard link to directory ${JSON.stringify(entry.linkTarget)}`);
      case 'whiteout':
        throw new StoreError('bad-layer', `layer entry ${JSON.stringify(entry.path)} is a hard link to ${JSON.stringify(entry.linkTarget)}, which this layer deletes`);
      case 'pending-link':
        this.clear(path);
        this.states.set(path, { kind: 'pending-link', target: targetState.target, entry: entry.path });
        return;
      case 'pending-node':
        // Device nodes have no content to share: an identical node serves as well as a link.
        this.clear(path);
        this.states.set(path, { ...targetState, node: { ...targetState.node, path } });
        return;
      default: {
        this.clear(path);
        fsSync.linkSync(this.absolute(target), this.absolute(path));
        this.states.set(path, { kind: targetState.kind, inode: targetState.inode });
      }
    }
  }

  /** Creates deferred nodes, resolves links into lower layers, then sets xattrs and directory metadata. */
  async finish(): Promise<ExtractedLayerStats> {
    this.finished = true;
    await this.createNodes();
    await this.resolveLowerLinks();
    await this.applyXattrs();
    await this.applyDirectoryMetadata();
    return this.stats();
  }

  private async createNodes(): Promise<void> {
    const nodes: SpecialFile[] = [];
    const owned: Array<{ path: string; uid: number; gid: number; mode: number; mtime: number }> = [];
    for (const [path, state] of this.states) {
      if (state.kind === 'whiteout') nodes.push({ path, kind: 'char-device', major: 0, minor: 0, mode: 0 });
      else if (state.kind === 'pending-node') {
        nodes.push(state.node);
        owned.push({ path, uid: state.uid, gid: state.gid, mode: state.node.mode, mtime: state.mtime });
      }
    }
    await createSpecialFiles(this.root, nodes);
    for (const { path, uid, gid, mode, mtime } of owned) {
      const absolute = this.absolute(path);
      fsSync.lchownSync(absolute, uid, gid);
      if (mode & 0o7000) fsSync.chmodSync(absolute, mode);
      fsSync.lutimesSync(absolute, mtime, mtime);
    }
    for (const [path, state] of this.states) {
      if (state.kind === 'whiteout' || state.kind === 'pending-node') this.states.set(path, { kind: 'device', inode: { size: 0 } });
    }
  }

  private async resolveLowerLinks(): Promise<void> {
    const links = [...this.states].filter((pair): pair is [string, Extract<PathState, { kind: 'pending-link' }>] => pair[1].kind === 'pending-link');
    if (links.length === 0) return;
    this.lowerLinks = links.length;
    const lowerDirs = await this.options.lowerDirs();
    for (const [path, link] of links) {
      const existing = this.states.get(link.target);
      let targetState: Extract<PathState, { inode: Inode }>;
      if (existing === undefined) {
        targetState = await this.copyUp(link.target, link.entry, lowerDirs);
      } else if ((existing.kind === 'file' || existing.kind === 'symlink' || existing.kind === 'device') && existing.copiedUp) {
        targetState = existing;
      } else {
        throw new StoreError('bad-layer', `layer entry ${JSON.stringify(link.entry)} hard-links to ${JSON.stringify(link.target)} from a lower layer, but this layer replaces that path afterwards; such a layer cannot be applied unambiguously`);
      }
      await fs.link(this.absolute(link.target), this.absolute(path));
      this.states.set(path, { kind: targetState.kind, inode: targetState.inode });
    }
  }

  /**
   * Brings a lower layer's file into this layer, with its metadata, the way overlayfs copies a
   * file up before linking it; the link then joins the copy.
   */
  private async copyUp(target: string, entry: string, lowerDirs: string[]): Promise<Extract<PathState, { inode: Inode }>> {
    for (const ancestor of ancestorsOf(target)) {
      const state = this.states.get(ancestor);
      if (state === undefined) continue;
      if (state.kind !== 'dir' || state.opaque) {
        throw new StoreError('bad-layer', `layer entry ${JSON.stringify(entry)} is a hard link to ${JSON.stringify(target)}, which this layer deletes or hides`);
      }
    }
    const lower = await lookupInLowerLayers(lowerDirs, target, entry);
    if (!lower) {
      throw new StoreError('bad-layer', `layer entry ${JSON.stringify(entry)} is a hard link to ${JSON.stringify(target)}, which exists neither in this layer nor in the layers below it`);
    }
    for (const ancestor of ancestorsOf(target)) {
      if (this.states.has(ancestor)) continue;
      const stats = lower.ancestors.get(ancestor);
      await fs.mkdir(this.absolute(ancestor), 0o700);
      if (stats) await fs.lchown(this.absolute(ancestor), stats.uid, stats.gid);
      this.states.set(ancestor, stats
        ? { kind: 'dir', opaque: false, mode: stats.mode & 0o7777, mtime: stats.mtimeMs / 1000 }
        : { kind: 'dir', opaque: false, mode: 0o755 });
    }
    const state = await this.copyFile(lower.absolutePath, lower.stats, target, entry);
    this.states.set(target, state);
    this.recordXattrs(target, await readXattrs(lower.absolutePath));
    return state;
  }

  private async copyFile(source: string, stats: Stats, target: string, entry: string): Promise<Extract<PathState, { inode: Inode }>> {
    const absolute = this.absolute(target);
    let state: Extract<PathState, { inode: Inode }>;
    if (stats.isFile()) {
      await fs.copyFile(source, absolute, constants.COPYFILE_EXCL);
      state = { kind: 'file', inode: { size: stats.size }, copiedUp: true };
    } else if (stats.isSymbolicLink()) {
      const linkTarget = await fs.readlink(source);
      await fs.symlink(linkTarget, absolute);
      state = { kind: 'symlink', inode: { size: Buffer.byteLength(linkTarget) }, copiedUp: true };
    } else if (stats.isCharacterDevice() || stats.isBlockDevice() || stats.isFIFO()) {
      const kind = stats.isFIFO() ? 'fifo' : stats.isCharacterDevice() ? 'char-device' : 'block-device';
      await createSpecialFiles(this.root, [{ path: target, kind, major: majorOf(stats.rdev), minor: minorOf(stats.rdev), mode: stats.mode & 0o7777 }]);
      state = { kind: 'device', inode: { size: 0 }, copiedUp: true };
    } else {
      throw new StoreError('bad-layer', `layer entry ${JSON.stringify(entry)} is a hard link to ${JSON.stringify(target)} in a lower layer, which is a socket`);
    }
    await fs.lchown(absolute, stats.uid, stats.gid);
    if (!stats.isSymbolicLink()) await fs.chmod(absolute, stats.mode & 0o7777);
    await fs.lutimes(absolute, stats.atimeMs / 1000, stats.mtimeMs / 1000);
    return state;
  }

  private async applyXattrs(): Promise<void> {
    const assignments: XattrAssignment[] = [];
    for (const [path, xattrs] of this.xattrs) {
      for (const [name, value] of xattrs) assignments.push({ path, name, value });
    }
    for (const [path, state] of this.states) {
      if (state.kind === 'dir' && state.opaque) assignments.push({ path, name: OPAQUE_XATTR, value: Buffer.from('y') });
    }
    await applyXattrs(this.root, assignments);
  }

  /** Last, deepest first: creating children changes a directory's mtime, and modes may forbid writing. */
  private async applyDirectoryMetadata(): Promise<void> {
    const dirs: Array<{ path: string; depth: number; mode?: number; mtime?: number }> = [];
    for (const [path, state] of this.states) {
      if (state.kind === 'dir' && (state.mode !== undefined || state.mtime !== undefined)) {
        dirs.push({ path, depth: path === '' ? 0 : path.split('/').length, mode: state.mode, mtime: state.mtime });
      }
    }
    dirs.sort((a, b) => b.depth - a.depth);
    for (const dir of dirs) {
      const absolute = this.absolute(dir.path);
      if (dir.mode !== undefined) fsSync.chmodSync(absolute, dir.mode);
      if (dir.mtime !== undefined) fsSync.lutimesSync(absolute, dir.mtime, dir.mtime);
    }
  }

  private stats(): ExtractedLayerStats {
    const inodes = new Set<Inode>();
    let dirs = 0;
    for (const state of this.states.values()) {
      if (state.kind === 'dir') dirs++;
      else if (state.kind === 'file' || state.kind === 'symlink' || state.kind === 'device') inodes.add(state.inode);
    }
    let size = 0;
    for (const inode of inodes) size += inode.size;
    return { size, inodes: dirs + inodes.size };
  }
}

