import { constants, promises as fs } from 'node:fs';
import { extname, join } from 'node:path';
import type { Logger } from '@skiff/common';
import { CdiError, parseCdiSpec, parseQualifiedName, type CdiContainerEdits, type CdiSpec } from './cdi-spec.js';
import { notRootsAlone, whyDirectoryIsNotRootsAlone } from './root-owned.js';

/** Spec files are small; a larger one is refused rather than read. */
const MAX_SPEC_BYTES = 1024 * 1024;
const SPEC_EXTENSIONS = new Set(['.json', '.yaml', '.yml']);

/** Opened as it is (a symbolic link is refused), never blocking on a FIFO. */
const SPEC_OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;

interface LoadedFile {
  mtimeMs: number;
  ctimeMs: number;
  size: number;
  spec?: CdiSpec;
  error?: string;
}

/** One requested device and the edits it brings: its spec's, then its own. */
export interface ResolvedCdiDevice {
  name: string;
  file: string;
  specEdits: CdiContainerEdits;
  deviceEdits: CdiContainerEdits;
}

interface Definition {
  file: string;
  priority: number;
  spec: CdiSpec;
  edits: CdiContainerEdits;
  /** Another spec of the same priority defines it too. */
  conflict?: string;
}

/**
 * The CDI devices the spec directories define, re-read whenever a file changes (its mtime, ctime
 * or size), so new and edited specs apply at the next CreateContainer without a restart. A device
 * of a later directory overrides one of an earlier directory; two specs of the same directory
 * defining one device make it unusable, as the CDI specification says.
 *
 * A spec runs hooks as root, adds devices and binds host paths into containers: only spec files
 * and directories that are root's alone (owned by root, writable by no one else, directories
 * above them too) are read, and spec files are opened without following links. Anything else is
 * refused, named in a warning and in the error of a device only it could have defined.
 */
export class CdiRegistry {
  private readonly files = new Map<string, LoadedFile>();
  /** Spec directories and files not used at the last look, with why: what the error of a device not found lists. */
  private refused = new Map<string, string>();
  /** The reason each refused path was last warned about, so that a warning is logged once. */
  private readonly warned = new Map<string, string>();

  constructor(
    private readonly dirs: readonly string[],
    private readonly log?: Pick<Logger, 'warn'>,
  ) {}

  /** Resolves fully qualified device names (`vendor.com/class=name`), in the order asked. */
  async resolve(names: readonly string[]): Promise<ResolvedCdiDevice[]> {
    if (names.length === 0) return [];
    const definitions = await this.definitions();
    return names.map((name) => {
      if (!parseQualifiedName(name)) throw new CdiError(`CDI device "${name}" is not a fully qualified name (vendor.com/class=name)`);
      const found = definitions.get(name);
      if (!found) {
        const broken = [...this.refused].map(([path, why]) => `${path}: ${why}`);
        const why = broken.length > 0 ? `; spec files and directories not used: ${broken.join('; ')}` : '';
        throw new CdiError(`CDI device "${name}" is not defined by any spec in ${this.dirs.join(', ')}${why}`);
      }
      if (found.conflict) throw new CdiError(`CDI device "${name}" is defined by both ${found.conflict} and ${found.file}`);
      return { name, file: found.file, specEdits: found.spec.containerEdits, deviceEdits: found.edits };
    });
  }

  private async definitions(): Promise<Map<string, Definition>> {
    const out = new Map<string, Definition>();
    const present = new Set<string>();
    const refused = new Map<string, string>();
    for (const [priority, dir] of this.dirs.entries()) {
      const unsafe = await whyDirectoryIsNotRootsAlone(dir);
      if (unsafe === 'missing') continue;
      if (unsafe) {
        refused.set(dir, `spec directory refused: ${unsafe}; CDI spec directories must be root's alone`);
        continue;
      }
      for (const file of await specFiles(dir)) {
        present.add(file);
        const loaded = await this.load(file);
        if (loaded?.error) refused.set(file, loaded.error);
        if (!loaded?.spec) continue;
        for (const device of loaded.spec.devices) {
          const name = `${loaded.spec.kind}=${device.name}`;
          const earlier = out.get(name);
          const definition: Definition = { file, priority, spec: loaded.spec, edits: device.containerEdits };
          if (earlier && earlier.priority === priority) definition.conflict = earlier.file;
          out.set(name, definition);
        }
      }
    }
    for (const file of this.files.keys()) if (!present.has(file)) this.files.delete(file);
    this.refused = refused;
    this.warnOnce(refused);
    return out;
  }

  private warnOnce(refused: ReadonlyMap<string, string>): void {
    for (const path of this.warned.keys()) if (!refused.has(path)) this.warned.delete(path);
    for (const [path, why] of refused) {
      if (this.warned.get(path) === why) continue;
      this.warned.set(path, why);
      this.log?.warn({ path, reason: why }, `CDI: ${path} is not used: ${why}`);
    }
  }

  private async load(file: string): Promise<LoadedFile | undefined> {
    let handle: fs.FileHandle;
    try {
      handle = await fs.open(file, SPEC_OPEN_FLAGS);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ELOOP') return undefined;
      return { mtimeMs: 0, ctimeMs: 0, size: 0, error: "refused: a symbolic link (spec files are read only as they are; CDI specs must be root's alone)" };
    }
    try {
      const st = await handle.stat();
      const cached = this.files.get(file);
      if (cached && cached.mtimeMs === st.mtimeMs && cached.ctimeMs === st.ctimeMs && cached.size === st.size) return cached;
      const loaded: LoadedFile = { mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, size: st.size };
      const notRoots = notRootsAlone(st);
      if (!st.isFile()) loaded.error = 'not a regular file';
      else if (notRoots) loaded.error = `refused: ${notRoots}; CDI specs must be root's alone`;
      else if (st.size > MAX_SPEC_BYTES) loaded.error = `${st.size} bytes, more than the ${MAX_SPEC_BYTES} read`;
      else {
        try {
          loaded.spec = await parseCdiSpec(await handle.readFile('utf8'), extname(file) !== '.json');
        } catch (err) {
          loaded.error = err instanceof CdiError ? err.message : String(err);
        }
      }
      this.files.set(file, loaded);
      return loaded;
    } finally {
      await handle.close();
    }
  }
}

/** The spec files of a directory, by name; none when it does not exist. */
async function specFiles(dir: string): Promise<string[]> {
  const names = await fs.readdir(dir).catch(() => [] as string[]);
  return names.filter((n) => SPEC_EXTENSIONS.has(extname(n))).sort().map((n) => join(dir, n));
}
