import { promises as fs } from 'node:fs';

/** Mount points from /proc/self/mountinfo, each with its optional fields ("shared:N", "master:N"). */
export async function mountTable(): Promise<Map<string, string[]>> {
  const text = await fs.readFile('/proc/self/mountinfo', 'utf8');
  const table = new Map<string, string[]>();
  for (const line of text.split('\n')) {
    const fields = line.split(' ');
    if (!fields[4]) continue;
    // Field 5 is the mount point, with spaces and the like written as octal escapes.
    const point = fields[4].replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));
    const separator = fields.indexOf('-', 6);
    table.set(point, fields.slice(6, separator < 0 ? undefined : separator));
  }
  return table;
}

export async function mountPoints(): Promise<Set<string>> {
  return new Set((await mountTable()).keys());
}
