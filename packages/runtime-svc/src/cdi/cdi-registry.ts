import { constants, promises as fs } from 'node:fs';
import { extname, join } from 'node:path';
import { CdiError, parseCdiSpec, parseQualifiedName, type CdiContainerEdits, type CdiSpec } from './cdi-spec.js';

/** Spec files are small; a larger one is refused rather than read. */
const MAX_SPEC_BYTES = 1024 * 1024;
const SPEC_EXTENSIONS = new Set(['.json', '.yaml', '.yml']);

interface LoadedFile {
  mtimeMs: number;
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
 * The CDI devices the spec directories define, re-read whenever a file changes (its mtime or
 * size), so new and edited specs apply at the next CreateContainer without a restart. A device
 * of a later directory overrides one of an earlier directory; two specs of the same directory
 * defining one device make it unusable, as the CDI specification says.
 */
export class CdiRegistry {
  private readonly files = new Map<string, LoadedFile>();

  constructor(private readonly dirs: readonly string[]) {}

  /** Resolves fully qualified device names (`vendor.com/class=name`), in the order asked. */
  async resolve(names: readonly string[]): Promise<ResolvedCdiDevice[]> {
    if (names.length === 0) return [];
    const definitions = await this.definitions();
    return names.map((name) => {
      if (!parseQualifiedName(name)) throw new CdiError(`CDI device "${name}" is not a fully qualified name (vendor.com/class=name)`);
      const found = definitions.get(name);
      if (!found) {
        const broken = [...this.files].filter(([, f]) => f.error).map(([file, f]) => `${file}: ${f.error}`);
        const why = broken.length > 0 ? `; spec files that could not be read: ${broken.join('; ')}` : '';
        throw new CdiError(`CDI device "${name}" is not defined by any spec in ${this.dirs.join(', ')}${why}`);
      }
      if (found.conflict) throw new CdiError(`CDI device "${name}" is defined by both ${found.conflict} and ${found.file}`);
      return { name, file: found.file, specEdits: found.spec.containerEdits, deviceEdits: found.edits };
    });
  }

  private async definitions(): Promise<Map<string, Definition>> {
    const out = new Map<string, Definition>();
    const present = new Set<string>();
    for (const [priority, dir] of this.dirs.entries()) {
      for (const file of await specFiles(dir)) {
        present.add(file);
        const loaded = await this.load(file);
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
    return out;
  }

  private async load(file: string): Promise<LoadedFile | undefined> {
    let handle: fs.FileHandle;
    try {
      handle = await fs.open(file, constants.O_RDONLY | constants.O_NONBLOCK);
    } catch {
      return undefined;
    }
    try {
      const st = await handle.stat();
      const cached = this.files.get(file);
      if (cached && cached.mtimeMs === st.mtimeMs && cached.size === st.size) return cached;
      const loaded: LoadedFile = { mtimeMs: st.mtimeMs, size: st.size };
      if (!st.isFile()) loaded.error = 'not a regular file';
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
