/**
 * Streaming tar writer (ustar headers, PAX extended headers where ustar falls short).
 *
 *   type TarEntry                      file | dir | symlink | hardlink | char | block | fifo
 *   type TarFileContent                Buffer | string | { path, size? } | { size, open() }
 *   tarChunks(entries): AsyncGenerator<Buffer>   the archive, block by block
 *   tarStream(entries): Readable                  the same as a byte stream (pull-driven)
 *   class TarWriter(out: Writable)     add(entry), finish({ end? }) with backpressure
 *   DEFAULT_TAR_MTIME                  mtime used when an entry gives none
 *
 * Names and link targets are written exactly as given (only a directory name gets
 * a trailing "/"), so hostile archives ("../x", "/abs", "link/x" through a symlink)
 * can be produced on purpose. PAX records are emitted for names/targets longer than
 * the ustar fields or not plain ASCII, sizes >= 8 GiB, ids beyond 7 octal digits,
 * non-integer or negative mtimes, xattrs (SCHILY.xattr.*) and any extra records.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { once } from 'node:events';
import { Readable, type Writable } from 'node:stream';

export const DEFAULT_TAR_MTIME = 1_700_000_000;

export interface TarEntryCommon {
  name: string;
  /** Permission bits including setuid/setgid/sticky (07777). */
  mode?: number;
  uid?: number;
  gid?: number;
  uname?: string;
  gname?: string;
  /** Seconds since the epoch; may be fractional or negative (then carried in PAX). */
  mtime?: number;
  xattrs?: Record<string, string | Buffer>;
  /** Extra PAX records, written verbatim. */
  pax?: Record<string, string | Buffer>;
}

/** Regular file content: inline, a file on disk, or a stream of known size. */
export type TarFileContent =
  | Buffer
  | string
  | { path: string; size?: number }
  | { size: number; open: () => Readable | AsyncIterable<Buffer> };

export type TarEntry =
  | (TarEntryCommon & { type: 'file'; content: TarFileContent })
  | (TarEntryCommon & { type: 'dir' })
  | (TarEntryCommon & { type: 'symlink'; target: string })
  | (TarEntryCommon & { type: 'hardlink'; target: string })
  | (TarEntryCommon & { type: 'char' | 'block'; major: number; minor: number })
  | (TarEntryCommon & { type: 'fifo' });

const BLOCK = 512;

const TYPE_FLAGS: Record<TarEntry['type'], string> = {
  file: '0',
  hardlink: '1',
  symlink: '2',
  char: '3',
  block: '4',
  dir: '5',
  fifo: '6',
};

const DEFAULT_MODES: Record<TarEntry['type'], number> = {
  file: 0o644,
  hardlink: 0o644,
  symlink: 0o777,
  char: 0o666,
  block: 0o660,
  dir: 0o755,
  fifo: 0o644,
};

/** Largest value an octal field of `width` bytes can hold (one byte for the NUL). */
function octalLimit(width: number): number {
  return 8 ** (width - 1) - 1;
}

function isPlainAscii(value: string): boolean {
  return /^[\x20-\x7e]*$/.test(value);
}

function asciiFallback(value: string, max: number): string {
  return value.replace(/[^\x20-\x7e]/g, '_').slice(0, max);
}

function writeText(header: Buffer, offset: number, width: number, value: string): void {
  header.write(value, offset, width, 'utf8');
}

function writeOctal(header: Buffer, offset: number, width: number, value: number): void {
  header.write(value.toString(8).padStart(width - 1, '0') + '\0', offset, width, 'ascii');
}

/** One PAX record: "<len> <key>=<value>\n", where <len> counts the whole record. */
function paxRecord(key: string, value: string | Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(` ${key}=`, 'utf8'), Buffer.from(value), Buffer.from('\n')]);
  let length = body.length + 1;
  while (String(length).length + body.length !== length) length = String(length).length + body.length;
  return Buffer.concat([Buffer.from(String(length), 'ascii'), body]);
}

function padding(size: number): Buffer {
  const rest = size % BLOCK;
  return rest === 0 ? Buffer.alloc(0) : Buffer.alloc(BLOCK - rest);
}

interface HeaderFields {
  name: string;
  mode: number;
  uid: number;
  gid: number;
  size: number;
  mtime: number;
  typeflag: string;
  linkname: string;
  uname: string;
  gname: string;
  devmajor: number;
  devminor: number;
}

function encodeHeader(fields: HeaderFields): Buffer {
  const header = Buffer.alloc(BLOCK);
  writeText(header, 0, 100, fields.name);
  writeOctal(header, 100, 8, fields.mode);
  writeOctal(header, 108, 8, fields.uid);
  writeOctal(header, 116, 8, fields.gid);
  writeOctal(header, 124, 12, fields.size);
  writeOctal(header, 136, 12, fields.mtime);
  header.fill(0x20, 148, 156);
  writeText(header, 156, 1, fields.typeflag);
  writeText(header, 157, 100, fields.linkname);
  writeText(header, 257, 6, 'ustar\0');
  writeText(header, 263, 2, '00');
  writeText(header, 265, 32, fields.uname);
  writeText(header, 297, 32, fields.gname);
  writeOctal(header, 329, 8, fields.devmajor);
  writeOctal(header, 337, 8, fields.devminor);
  let checksum = 0;
  for (const byte of header) checksum += byte;
  header.write(checksum.toString(8).padStart(6, '0') + '\0 ', 148, 8, 'ascii');
  return header;
}

function contentSizeHint(content: TarFileContent): number | undefined {
  if (Buffer.isBuffer(content)) return content.length;
  if (typeof content === 'string') return Buffer.byteLength(content);
  return content.size;
}

/** Headers (PAX + ustar) for one entry; `size` is the data size that follows. */
function entryHeaders(entry: TarEntry, size: number): Buffer[] {
  const records: Buffer[] = [];
  const name = entry.type === 'dir' && !entry.name.endsWith('/') ? `${entry.name}/` : entry.name;
  const linkname = entry.type === 'symlink' || entry.type === 'hardlink' ? entry.target : '';
  const uid = entry.uid ?? 0;
  const gid = entry.gid ?? 0;
  const uname = entry.uname ?? '';
  const gname = entry.gname ?? '';
  const mtime = entry.mtime ?? DEFAULT_TAR_MTIME;

  const nameFits = Buffer.byteLength(name) <= 100 && isPlainAscii(name);
  if (!nameFits) records.push(paxRecord('path', name));
  const linkFits = Buffer.byteLength(linkname) <= 100 && isPlainAscii(linkname);
  if (!linkFits) records.push(paxRecord('linkpath', linkname));
  if (size > octalLimit(12)) records.push(paxRecord('size', String(size)));
  if (uid > octalLimit(8)) records.push(paxRecord('uid', String(uid)));
  if (gid > octalLimit(8)) records.push(paxRecord('gid', String(gid)));
  if (Buffer.byteLength(uname) > 32 || !isPlainAscii(uname)) records.push(paxRecord('uname', uname));
  if (Buffer.byteLength(gname) > 32 || !isPlainAscii(gname)) records.push(paxRecord('gname', gname));
  const mtimeFits = Number.isInteger(mtime) && mtime >= 0 && mtime <= octalLimit(12);
  if (!mtimeFits) records.push(paxRecord('mtime', String(mtime)));
  for (const [key, value] of Object.entries(entry.xattrs ?? {})) {
    records.push(paxRecord(`SCHILY.xattr.${key}`, value));
  }
  for (const [key, value] of Object.entries(entry.pax ?? {})) records.push(paxRecord(key, value));

  const devmajor = entry.type === 'char' || entry.type === 'block' ? entry.major : 0;
  const devminor = entry.type === 'char' || entry.type === 'block' ? entry.minor : 0;
  const ustar = encodeHeader({
    name: nameFits ? name : asciiFallback(name, 100),
    mode: (entry.mode ?? DEFAULT_MODES[entry.type]) & 0o7777,
    uid: uid > octalLimit(8) ? 0 : uid,
    gid: gid > octalLimit(8) ? 0 : gid,
    size: size > octalLimit(12) ? 0 : size,
    mtime: mtimeFits ? mtime : Math.max(0, Math.min(Math.floor(mtime), octalLimit(12))),
    typeflag: TYPE_FLAGS[entry.type],
    linkname: linkFits ? linkname : asciiFallback(linkname, 100),
    uname: asciiFallback(uname, 32),
    gname: asciiFallback(gname, 32),
    devmajor,
    devminor,
  });
  if (records.length === 0) return [ustar];

  const paxData = Buffer.concat(records);
  const baseName = name.replace(/\/+$/, '').split('/').pop() ?? '';
  const paxHeader = encodeHeader({
    name: asciiFallback(`PaxHeaders.0/${baseName}`, 100),
    mode: 0o644,
    uid: 0,
    gid: 0,
    size: paxData.length,
    mtime: mtimeFits ? mtime : 0,
    typeflag: 'x',
    linkname: '',
    uname: '',
    gname: '',
    devmajor: 0,
    devminor: 0,
  });
  return [paxHeader, paxData, padding(paxData.length), ustar];
}

async function* fileData(name: string, content: TarFileContent, size: number): AsyncGenerator<Buffer> {
  if (Buffer.isBuffer(content)) {
    yield content;
    return;
  }
  if (typeof content === 'string') {
    yield Buffer.from(content, 'utf8');
    return;
  }
  const source = 'path' in content ? createReadStream(content.path) : content.open();
  let written = 0;
  for await (const chunk of source) {
    const buf = chunk as Buffer;
    written += buf.length;
    if (written > size) throw new Error(`tar entry ${name}: content longer than declared size ${size}`);
    yield buf;
  }
  if (written !== size) throw new Error(`tar entry ${name}: content is ${written} bytes, declared ${size}`);
}

async function* entryChunks(entry: TarEntry): AsyncGenerator<Buffer> {
  if (entry.type !== 'file') {
    yield* entryHeaders(entry, 0);
    return;
  }
  let size = contentSizeHint(entry.content);
  if (size === undefined) {
    const source = entry.content as { path: string };
    size = (await stat(source.path)).size;
  }
  yield* entryHeaders(entry, size);
  yield* fileData(entry.name, entry.content, size);
  const pad = padding(size);
  if (pad.length > 0) yield pad;
}

/** The whole archive, including the two terminating zero blocks. */
export async function* tarChunks(entries: Iterable<TarEntry> | AsyncIterable<TarEntry>): AsyncGenerator<Buffer> {
  for await (const entry of entries) yield* entryChunks(entry);
  yield Buffer.alloc(2 * BLOCK);
}

export function tarStream(entries: Iterable<TarEntry> | AsyncIterable<TarEntry>): Readable {
  return Readable.from(tarChunks(entries), { objectMode: false });
}

/** Imperative writer onto any Writable, honouring its backpressure. */
export class TarWriter {
  constructor(private readonly out: Writable) {}

  async add(entry: TarEntry): Promise<void> {
    for await (const chunk of entryChunks(entry)) await this.write(chunk);
  }

  /** Writes the end-of-archive blocks; ends the Writable unless told not to. */
  async finish(options: { end?: boolean } = {}): Promise<void> {
    await this.write(Buffer.alloc(2 * BLOCK));
    if (options.end ?? true) {
      this.out.end();
      await once(this.out, 'finish');
    }
  }

  private async write(chunk: Buffer): Promise<void> {
    if (!this.out.write(chunk)) await once(this.out, 'drain');
  }
}
