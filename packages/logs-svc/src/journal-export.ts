/**
 * An incremental reader of journalctl's export format (`-o export`), which is binary-safe: each
 * field is either `NAME=value\n` (text without newlines) or `NAME\n` followed by the value's
 * size as a little-endian 64-bit integer, the value's bytes and `\n`. An empty line ends an entry.
 */

export type JournalFields = Map<string, Buffer>;

export class ExportFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ExportFormatError';
  }
}

const NEWLINE = 0x0a;
const EQUALS = 0x3d;

export class ExportParser {
  private buffer: Buffer = Buffer.alloc(0);
  private fields: JournalFields = new Map();

  /** Bytes received and not yet part of a whole entry. */
  get pendingBytes(): number {
    return this.buffer.length;
  }

  /** Feeds a chunk of journalctl's output; returns the entries it completes, in order. */
  push(chunk: Buffer): JournalFields[] {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    const entries: JournalFields[] = [];
    const buf = this.buffer;
    let pos = 0;
    for (;;) {
      const nl = buf.indexOf(NEWLINE, pos);
      if (nl < 0) break;
      if (nl === pos) {
        // An empty line ends the entry.
        if (this.fields.size > 0) entries.push(this.fields);
        this.fields = new Map();
        pos = nl + 1;
        continue;
      }
      const eq = buf.indexOf(EQUALS, pos);
      if (eq >= 0 && eq < nl) {
        this.fields.set(buf.toString('latin1', pos, eq), buf.subarray(eq + 1, nl));
        pos = nl + 1;
        continue;
      }
      // A binary field: the name line, then the size and the bytes.
      const sizeAt = nl + 1;
      if (buf.length < sizeAt + 8) break;
      const size = buf.readBigUInt64LE(sizeAt);
      if (size > BigInt(buf.length)) break;
      const dataAt = sizeAt + 8;
      const end = dataAt + Number(size);
      if (buf.length < end + 1) break;
      if (buf[end] !== NEWLINE) throw new ExportFormatError(`binary field ${buf.toString('latin1', pos, nl)} does not end with a newline`);
      this.fields.set(buf.toString('latin1', pos, nl), buf.subarray(dataAt, end));
      pos = end + 1;
    }
    // Values keep pointing into `buf`; only the unread tail is carried on.
    this.buffer = pos === buf.length ? Buffer.alloc(0) : Buffer.from(buf.subarray(pos));
    return entries;
  }
}

/** Writes entries in the export format (the inverse of ExportParser, for tests and tools). */
export function encodeExportEntry(fields: Iterable<[string, Buffer | string]>): Buffer {
  const parts: Buffer[] = [];
  for (const [name, raw] of fields) {
    const value = typeof raw === 'string' ? Buffer.from(raw, 'utf8') : raw;
    if (value.includes(NEWLINE) || name.startsWith('__') === false && value.some((b) => b < 0x20 && b !== 0x09)) {
      const size = Buffer.alloc(8);
      size.writeBigUInt64LE(BigInt(value.length));
      parts.push(Buffer.from(`${name}\n`, 'latin1'), size, value, Buffer.from([NEWLINE]));
    } else {
      parts.push(Buffer.from(`${name}=`, 'latin1'), value, Buffer.from([NEWLINE]));
    }
  }
  parts.push(Buffer.from([NEWLINE]));
  return Buffer.concat(parts);
}
