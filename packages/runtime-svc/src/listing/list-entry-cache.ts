/** What a list entry is made of, flat: the values it encodes, primitives only. */
export type EntryContent = readonly (string | number | boolean | null | undefined)[];

/**
 * Per record, the sealed list entry (frozen, already encoded: see ListResponseEncoder in
 * @skiff/proto) last built for it, with its content. A listing reads each record's content afresh
 * and keeps the sealed entry while the content is the same; whatever changes a record, and
 * wherever, its next listing sees different content and encodes the entry again.
 */
export class ListEntryCache<Rec extends object, Entry extends object> {
  private readonly sealed = new WeakMap<Rec, { entry: Entry; content: EntryContent }>();

  constructor(private readonly seal: (entry: Entry) => Entry) {}

  /** The entry of `rec`: the sealed one while `content` is unchanged, else `build()`, sealed. */
  entryFor(rec: Rec, content: EntryContent, build: () => Entry): Entry {
    const previous = this.sealed.get(rec);
    if (previous !== undefined && sameContent(previous.content, content)) return previous.entry;
    const entry = this.seal(build());
    this.sealed.set(rec, { entry, content });
    return entry;
  }
}

export function sameContent(a: EntryContent, b: EntryContent): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Appends a string map to an entry's content: its size, then each key and value in order. */
export function appendMap(content: (string | number)[], map: Readonly<Record<string, string>>): void {
  const at = content.length;
  content.push(0);
  let size = 0;
  for (const key in map) {
    content.push(key, map[key]!);
    size++;
  }
  content[at] = size;
}
