/** Field layout of a 512-byte tar header block (POSIX ustar, with the GNU variant's magic). */
export const BLOCK_SIZE = 512;

export class TarFormatError extends Error {
  constructor(
    message: string,
    /** 'unsupported' for valid archives using features Skiff does not unpack (sparse files, multi-volume). */
    readonly reason: 'malformed' | 'unsupported' = 'malformed',
  ) {
    super(message);
    this.name = 'TarFormatError';
  }
}

export interface RawHeader {
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
  devMajor: number;
  devMinor: number;
}

export function isZeroBlock(block: Buffer): boolean {
  for (let i = 0; i < block.length; i++) if (block[i] !== 0) return false;
  return true;
}

function cString(block: Buffer, start: number, length: number): string {
  const end = block.indexOf(0, start);
  return block.toString('utf8', start, end === -1 || end > start + length ? start + length : end);
}

/** Octal (NUL/space padded) or GNU base-256 (high bit set, two's complement) numeric field. */
export function parseNumber(block: Buffer, start: number, length: number, field: string): number {
  const first = block[start]!;
  if (first & 0x80) {
    const negative = first === 0xff;
    let value = BigInt(first & 0x7f) - (negative ? 0x80n : 0n);
    for (let i = 1; i < length; i++) value = (value << 8n) | BigInt(block[start + i]!);
    if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < -BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new TarFormatError(`tar header field ${field} is out of range`);
    }
    return Number(value);
  }
  const text = block.toString('latin1', start, start + length).replace(/[\0 ]+$/, '').replace(/^[ \0]+/, '');
  if (text === '') return 0;
  if (!/^[0-7]+$/.test(text)) throw new TarFormatError(`tar header field ${field} is not an octal number: ${JSON.stringify(text)}`);
  return Number.parseInt(text, 8);
}

function verifyChecksum(block: Buffer): void {
  const stored = parseNumber(block, 148, 8, 'chksum');
  let unsigned = 0;
  let signed = 0;
  for (let i = 0; i < BLOCK_SIZE; i++) {
    const byte = i >= 148 && i < 156 ? 0x20 : block[i]!;
    unsigned += byte;
    signed += byte > 127 ? byte - 256 : byte;
  }
  if (stored !== unsigned && stored !== signed) throw new TarFormatError('tar header checksum mismatch (corrupt or not a tar archive)');
}

export function parseHeader(block: Buffer): RawHeader {
  verifyChecksum(block);
  const magic = block.toString('latin1', 257, 263);
  let name = cString(block, 0, 100);
  // Only POSIX ustar has a name prefix; the GNU format uses those bytes for other fields.
  if (magic === 'ustar\0') {
    const prefix = cString(block, 345, 155);
    if (prefix) name = `${prefix}/${name}`;
  }
  const hasDeviceFields = magic === 'ustar\0' || magic === 'ustar ';
  return {
    name,
    mode: parseNumber(block, 100, 8, 'mode'),
    uid: parseNumber(block, 108, 8, 'uid'),
    gid: parseNumber(block, 116, 8, 'gid'),
    size: parseNumber(block, 124, 12, 'size'),
    mtime: parseNumber(block, 136, 12, 'mtime'),
    typeflag: String.fromCharCode(block[156]!),
    linkname: cString(block, 157, 100),
    uname: hasDeviceFields ? cString(block, 265, 32) : '',
    gname: hasDeviceFields ? cString(block, 297, 32) : '',
    devMajor: hasDeviceFields ? parseNumber(block, 329, 8, 'devmajor') : 0,
    devMinor: hasDeviceFields ? parseNumber(block, 337, 8, 'devminor') : 0,
  };
}

export type PaxRecords = Map<string, Buffer>;

/** Parses "<length> <key>=<value>\n" records. Values stay as bytes: xattr values are binary. */
export function parsePax(data: Buffer): PaxRecords {
  const records: PaxRecords = new Map();
  let pos = 0;
  while (pos < data.length) {
    if (data[pos] === 0) break; // some writers pad the data with NULs
    const space = data.indexOf(0x20, pos);
    if (space === -1) throw new TarFormatError('malformed PAX header: record without length');
    const lengthText = data.toString('latin1', pos, space);
    if (!/^[0-9]+$/.test(lengthText)) throw new TarFormatError(`malformed PAX header: bad record length ${JSON.stringify(lengthText)}`);
    const length = Number.parseInt(lengthText, 10);
    const end = pos + length;
    if (length <= space - pos + 1 || end > data.length || data[end - 1] !== 0x0a) {
      throw new TarFormatError('malformed PAX header: record length does not match its content');
    }
    const equals = data.indexOf(0x3d, space + 1);
    if (equals === -1 || equals >= end) throw new TarFormatError('malformed PAX header: record without "="');
    records.set(data.toString('utf8', space + 1, equals), data.subarray(equals + 1, end - 1));
    pos = end;
  }
  return records;
}
