import { promises as fs } from 'node:fs';

/** One line of /proc/self/mountinfo. */
export interface MountEntry {
  id: number;
  parentId: number;
  /** The path of the mount's root within its filesystem ("/" for a whole filesystem, the bound directory for a bind). */
  root: string;
  point: string;
  /** The optional fields: "shared:N", "master:N". */
  optional: string[];
  /** The mount point itself is read-only (its per-mount "ro" option). */
  readonly: boolean;
}

/** Paths in mountinfo have spaces and the like written as octal escapes. */
function unescape(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));
}

export async function mountEntries(): Promise<MountEntry[]> {
  const text = await fs.readFile('/proc/self/mountinfo', 'utf8');
  const entries: MountEntry[] = [];
  for (const line of text.split('\n')) {
    const fields = line.split(' ');
    if (!fields[4]) continue;
    const separator = fields.indexOf('-', 6);
    entries.push({
      id: Number(fields[0]),
      parentId: Number(fields[1]),
      root: unescape(fields[3]!),
      point: unescape(fields[4]),
      optional: fields.slice(6, separator < 0 ? undefined : separator),
      readonly: fields[5]?.split(',').includes('ro') ?? false,
    });
  }
  return entries;
}

/** Mount points from /proc/self/mountinfo, each with its optional fields ("shared:N", "master:N"). */
export async function mountTable(): Promise<Map<string, string[]>> {
  return new Map((await mountEntries()).map((e) => [e.point, e.optional]));
}

export async function mountPoints(): Promise<Set<string>> {
  return new Set((await mountEntries()).map((e) => e.point));
}
