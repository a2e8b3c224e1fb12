/**
 * A small tar writer for hand-made test archives: lets tests produce entries no well-behaved
 * tool would (traversal names, whiteouts, links through symlinks) and exercise format corners
 * (PAX records, GNU long names, base-256 numbers).
 */
export interface TarSpec {
  name: string;
  /** Tar type flag; default '0' (regular file). */
  type?: string;
  mode?: number;
  uid?: number;
  gid?: number;
  mtime?: number;
  linkname?: string;
  data?: Buffer | string;
  devMajor?: number;
  devMinor?: number;
  /** PAX records for this entry (emitted as a preceding 'x' header). */
  pax?: Record<string, string | Buffer>;
  /** Emit the name through a GNU 'L' header (and linkname through 'K'). */
  gnuLongNames?: boolean;
  /** Encode uid, gid and size in GNU base-256. */
  base256?: boolean;
}

function writeString(block: Buffer, offset: number, length: number, value: string): void {
  const bytes = Buffer.from(value, 'utf8');
  if (bytes.length > length) throw new Error(`tar builder: ${JSON.stringify(value)} does not fit in ${length} bytes`);
  bytes.copy(block, offset);
}

function writeOctal(block: Buffer, offset: number, length: number, value: number): void {
  writeString(block, offset, length, `${value.toString(8).padStart(length - 1, '0')}\0`);
}

function writeBase256(block: Buffer, offset: number, length: number, value: number): void {
  let v = BigInt(value);
  for (let i = length - 1; i > 0; i--) {
    block[offset + i] = Number(v & 0xffn);
    v >>= 8n;
  }
  block[offset] = 0x80;
}

function header(fields: { name: string; type: string; mode: number; uid: number; gid: number; size: number; mtime: number; linkname: string; devMajor: number; devMinor: number; base256?: boolean }): Buffer {
  const block = Buffer.alloc(512);
  writeString(block, 0, 100, fields.name);
  writeOctal(block, 100, 8, fields.mode);
  const number = fields.base256 ? writeBase256 : writeOctal;
  number(block, 108, 8, fields.uid);
  number(block, 116, 8, fields.gid);
  number(block, 124, 12, fields.size);
  writeOctal(block, 136, 12, fields.mtime);
  block.fill(0x20, 148, 156);
  block.write(fields.type, 156, 'latin1');
  writeString(block, 157, 100, fields.linkname);
  block.write('ustar\u000000', 257, 'latin1');
  writeOctal(block, 329, 8, fields.devMajor);
  writeOctal(block, 337, 8, fields.devMinor);
  let sum = 0;
  for (const byte of block) sum += byte;
  writeString(block, 148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
  return block;
}

function padded(data: Buffer): Buffer[] {
  const pad = (512 - (data.length % 512)) % 512;
  return pad ? [data, Buffer.alloc(pad)] : [data];
}

export function paxRecords(records: Record<string, string | Buffer>): Buffer {
  const parts: Buffer[] = [];
  for (const [key, raw] of Object.entries(records)) {
    const value = typeof raw === 'string' ? Buffer.from(raw, 'utf8') : raw;
    const body = Buffer.concat([Buffer.from(` ${key}=`, 'utf8'), value, Buffer.from('\n')]);
    let length = body.length + 1;
    while (String(length).length + body.length !== length) length = String(length).length + body.length;
    parts.push(Buffer.from(String(length)), body);
  }
  return Buffer.concat(parts);
}

function metaEntry(type: string, name: string, payload: Buffer): Buffer[] {
  return [header({ name, type, mode: 0o644, uid: 0, gid: 0, size: payload.length, mtime: 0, linkname: '', devMajor: 0, devMinor: 0 }), ...padded(payload)];
}

export function buildTar(entries: TarSpec[], options: { globalPax?: Record<string, string>; endBlocks?: number } = {}): Buffer {
  const parts: Buffer[] = [];
  if (options.globalPax) parts.push(...metaEntry('g', 'pax_global_header', paxRecords(options.globalPax)));
  for (const entry of entries) {
    const data = entry.data === undefined ? Buffer.alloc(0) : Buffer.from(entry.data);
    let name = entry.name;
    let linkname = entry.linkname ?? '';
    if (entry.pax) parts.push(...metaEntry('x', 'PaxHeader', paxRecords(entry.pax)));
    if (entry.gnuLongNames) {
      parts.push(...metaEntry('L', '././@LongLink', Buffer.from(`${name}\0`)));
      name = name.slice(0, 99);
      if (linkname) {
        parts.push(...metaEntry('K', '././@LongLink', Buffer.from(`${linkname}\0`)));
        linkname = linkname.slice(0, 99);
      }
    }
    if (Buffer.byteLength(name) > 100) name = name.slice(0, 99);
    parts.push(
      header({
        name,
        type: entry.type ?? '0',
        mode: entry.mode ?? (entry.type === '5' ? 0o755 : 0o644),
        uid: entry.uid ?? 0,
        gid: entry.gid ?? 0,
        size: data.length,
        mtime: entry.mtime ?? 1_600_000_000,
        linkname,
        devMajor: entry.devMajor ?? 0,
        devMinor: entry.devMinor ?? 0,
        base256: entry.base256,
      }),
    );
    if (data.length) parts.push(...padded(data));
  }
  parts.push(Buffer.alloc(512 * (options.endBlocks ?? 2)));
  return Buffer.concat(parts);
}
