import { DEFAULT_EXTRACTION_LIMITS, LIMIT_KEYS, LimitError, MAX_PATH_BYTES } from '../limits.js';
import { ByteSource, TruncatedError } from './byte-source.js';
import { BLOCK_SIZE, TarFormatError, isZeroBlock, parseHeader, parsePax, type PaxRecords, type RawHeader } from './tar-header.js';

export type TarEntryType = 'file' | 'hardlink' | 'symlink' | 'char-device' | 'block-device' | 'directory' | 'fifo';

export interface TarEntry {
  /** The name as recorded (after PAX / GNU long-name overrides); not yet normalized. */
  path: string;
  type: TarEntryType;
  /** Permission bits including setuid, setgid and sticky. */
  mode: number;
  uid: number;
  gid: number;
  /** Bytes of content that follow (regular files only; 0 otherwise). */
  size: number;
  /** Seconds since the epoch, fractional when PAX gave more precision. */
  mtime: number;
  /** Symlink target or hardlink target. */
  linkTarget: string;
  devMajor: number;
  devMinor: number;
  /** From PAX SCHILY.xattr.* (and LIBARCHIVE.xattr.*) records. */
  xattrs: Map<string, Buffer>;
}

const TYPES: Record<string, TarEntryType> = {
  '0': 'file',
  '\0': 'file',
  '7': 'file',
  '1': 'hardlink',
  '2': 'symlink',
  '3': 'char-device',
  '4': 'block-device',
  '5': 'directory',
  '6': 'fifo',
  D: 'directory',
};

const HEADER_ONLY_TYPES = new Set(['1', '2', '3', '4', '5', '6']);

export interface TarReadOptions {
  /**
   * Called with every byte of the archive as it is read, including what follows the end marker.
   * Reading waits for a returned promise; a throw or rejection ends it.
   */
  onChunk?: (chunk: Buffer) => void | Promise<void>;
  /** Most headers (entries, PAX and long-name headers) the archive may have. */
  maxEntries?: number;
  /** Most bytes of PAX records in force for one entry: the global ones so far plus its own. */
  maxPaxHeaderBytes?: number;
}

interface ReadLimits {
  maxEntries: number;
  maxPaxHeaderBytes: number;
}

/**
 * Streams a tar archive: for each entry calls `onEntry` with its metadata and its content.
 * The content iterable is only valid until `onEntry` settles; whatever it does not consume is skipped.
 * After the end-of-archive marker the rest of the stream is read and discarded so that
 * `onChunk` sees every byte.
 */
export async function readTar(
  source: AsyncIterable<Buffer>,
  onEntry: (entry: TarEntry, content: AsyncIterable<Buffer>) => Promise<void>,
  options: TarReadOptions = {},
): Promise<void> {
  const input = new ByteSource(source, options.onChunk);
  const limits: ReadLimits = {
    maxEntries: options.maxEntries ?? DEFAULT_EXTRACTION_LIMITS.maxLayerEntries,
    maxPaxHeaderBytes: options.maxPaxHeaderBytes ?? DEFAULT_EXTRACTION_LIMITS.maxPaxHeaderBytes,
  };
  try {
    await readEntries(input, onEntry, limits);
    await input.drain();
  } catch (err) {
    if (err instanceof TruncatedError) throw new TarFormatError(`truncated tar archive: ${err.message}`);
    throw err;
  }
}

interface PayloadLimit {
  name: 'maxPaxHeaderBytes' | 'path';
  bytes: number;
}

/** A GNU long name or link: the name and its NUL. */
const LONG_NAME_LIMIT: PayloadLimit = { name: 'path', bytes: MAX_PATH_BYTES + 1 };

/** Read whole into memory, so refused before reading when over `limit`. */
async function readMetadataPayload(input: ByteSource, size: number, limit: PayloadLimit, what: string): Promise<Buffer> {
  if (size > limit.bytes) throw limitError(limit.name, `${what} of ${size} bytes is larger than the ${limit.bytes}-byte limit`);
  const data = size === 0 ? Buffer.alloc(0) : Buffer.from((await input.readExact(size)) ?? throwTruncated(input));
  await input.skip(padding(size));
  return data;
}

function throwTruncated(input: ByteSource): never {
  throw new TruncatedError(input.offset);
}

function padding(size: number): number {
  return (BLOCK_SIZE - (size % BLOCK_SIZE)) % BLOCK_SIZE;
}

function cutAtNul(data: Buffer): string {
  const nul = data.indexOf(0);
  return data.toString('utf8', 0, nul === -1 ? data.length : nul);
}

function limitError(limit: 'maxLayerEntries' | 'maxPaxHeaderBytes' | 'path', message: string): LimitError {
  return new LimitError(limit, `${message} (${LIMIT_KEYS[limit]})`);
}

/** Bytes the records take in the archive, near enough: keys and values. */
function paxSize(records: PaxRecords): number {
  let size = 0;
  for (const [key, value] of records) size += Buffer.byteLength(key) + value.length;
  return size;
}

async function readEntries(
  input: ByteSource,
  onEntry: (entry: TarEntry, content: AsyncIterable<Buffer>) => Promise<void>,
  limits: ReadLimits,
): Promise<void> {
  const globalPax: PaxRecords = new Map();
  let globalPaxSize = 0;
  let localPax: PaxRecords | undefined;
  let longName: string | undefined;
  let longLink: string | undefined;
  let headers = 0;
  const paxLimit: PayloadLimit = { name: 'maxPaxHeaderBytes', bytes: limits.maxPaxHeaderBytes };

  const checkPax = (local: PaxRecords | undefined): void => {
    const size = globalPaxSize + (local ? paxSize(local) : 0);
    if (size > limits.maxPaxHeaderBytes) {
      throw limitError('maxPaxHeaderBytes', `PAX records of ${size} bytes in force at byte ${input.offset} exceed the ${limits.maxPaxHeaderBytes}-byte limit`);
    }
  };

  for (;;) {
    const headerOffset = input.offset;
    const block = await input.readExact(BLOCK_SIZE);
    if (block === undefined) return; // no end marker: accept, as most readers do
    if (isZeroBlock(block)) return; // end of archive (the second zero block is drained by the caller)
    if (++headers > limits.maxEntries) throw limitError('maxLayerEntries', `layer has more than ${limits.maxEntries} entries`);

    let header: RawHeader;
    try {
      header = parseHeader(block);
    } catch (err) {
      if (err instanceof TarFormatError) throw new TarFormatError(`${err.message} (header at byte ${headerOffset})`, err.reason);
      throw err;
    }

    switch (header.typeflag) {
      case 'x':
        localPax = mergePax(localPax ?? new Map(), parsePax(await readMetadataPayload(input, header.size, paxLimit, 'PAX header')));
        checkPax(localPax);
        continue;
      case 'g':
        mergePax(globalPax, parsePax(await readMetadataPayload(input, header.size, paxLimit, 'PAX global header')));
        globalPaxSize = paxSize(globalPax);
        checkPax(localPax);
        continue;
      case 'L':
        longName = cutAtNul(await readMetadataPayload(input, header.size, LONG_NAME_LIMIT, 'GNU long name'));
        continue;
      case 'K':
        longLink = cutAtNul(await readMetadataPayload(input, header.size, LONG_NAME_LIMIT, 'GNU long link name'));
        continue;
      case 'V':
        await input.skip(header.size + padding(header.size));
        continue;
      case 'S':
        throw new TarFormatError(`entry ${JSON.stringify(longName ?? header.name)} is a GNU sparse file; sparse files are not supported in layers`, 'unsupported');
      case 'M':
        throw new TarFormatError(`entry ${JSON.stringify(longName ?? header.name)} continues a multi-volume archive; not supported in layers`, 'unsupported');
      default:
        break;
    }

    const type = TYPES[header.typeflag];
    if (type === undefined) {
      throw new TarFormatError(`entry ${JSON.stringify(longName ?? header.name)} has unknown tar type flag ${JSON.stringify(header.typeflag)}`);
    }
    const entry = buildEntry(header, type, effectivePax(globalPax, localPax), longName, longLink);
    localPax = undefined;
    longName = undefined;
    longLink = undefined;

    // Like Go's archive/tar (which wrote most image layers), links, devices, FIFOs and directories
    // never carry content whatever their size field says; GNU dump-directories do.
    const dataSize = HEADER_ONLY_TYPES.has(header.typeflag) ? 0 : entry.size;
    // Old (v7) archives mark directories only by a trailing slash.
    if (entry.type === 'file' && header.typeflag !== '7' && entry.path.endsWith('/') && dataSize === 0) entry.type = 'directory';
    if (entry.type !== 'file') entry.size = 0;
    const content = new EntryContent(input, entry.type === 'file' ? dataSize : 0);
    await onEntry(entry, content);
    await input.skip(dataSize - content.consumed + padding(dataSize));
  }
}

class EntryContent implements AsyncIterable<Buffer> {
  consumed = 0;
  constructor(
    private readonly input: ByteSource,
    private readonly size: number,
  ) {}

  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer, void, undefined> {
    for await (const slice of this.input.take(this.size - this.consumed)) {
      this.consumed += slice.length;
      yield slice;
    }
  }
}

function mergePax(into: PaxRecords, from: PaxRecords): PaxRecords {
  for (const [key, value] of from) into.set(key, value);
  return into;
}

function effectivePax(globalPax: PaxRecords, localPax: PaxRecords | undefined): PaxRecords {
  if (!localPax) return globalPax;
  if (globalPax.size === 0) return localPax;
  return mergePax(new Map(globalPax), localPax);
}

function paxString(pax: PaxRecords, key: string): string | undefined {
  const value = pax.get(key);
  // An empty value means "unset" (it cancels a global value).
  return value === undefined || value.length === 0 ? undefined : value.toString('utf8');
}

function paxNumber(pax: PaxRecords, key: string, fractional = false): number | undefined {
  const text = paxString(pax, key);
  if (text === undefined) return undefined;
  const pattern = fractional ? /^-?[0-9]+(\.[0-9]+)?$/ : /^[0-9]+$/;
  if (!pattern.test(text)) throw new TarFormatError(`PAX record ${key} is not a number: ${JSON.stringify(text)}`);
  return fractional ? Number.parseFloat(text) : Number.parseInt(text, 10);
}

function paxXattrs(pax: PaxRecords): Map<string, Buffer> {
  const xattrs = new Map<string, Buffer>();
  for (const [key, value] of pax) {
    if (key.startsWith('SCHILY.xattr.')) {
      xattrs.set(key.slice('SCHILY.xattr.'.length), Buffer.from(value));
    } else if (key.startsWith('LIBARCHIVE.xattr.')) {
      // libarchive percent-encodes the name and base64-encodes the value.
      const name = decodeURIComponent(key.slice('LIBARCHIVE.xattr.'.length));
      if (!xattrs.has(name)) xattrs.set(name, Buffer.from(value.toString('latin1'), 'base64'));
    }
  }
  return xattrs;
}

function checkPathLength(value: string, what: string): void {
  const length = Buffer.byteLength(value);
  if (length > MAX_PATH_BYTES) {
    throw limitError('path', `entry ${what} of ${length} bytes (${JSON.stringify(value.slice(0, 64))}...) is longer than the ${MAX_PATH_BYTES}-byte limit`);
  }
}

function buildEntry(header: RawHeader, type: TarEntryType, pax: PaxRecords, longName: string | undefined, longLink: string | undefined): TarEntry {
  const path = paxString(pax, 'path') ?? longName ?? header.name;
  const linkTarget = paxString(pax, 'linkpath') ?? longLink ?? header.linkname;
  checkPathLength(path, 'name');
  checkPathLength(linkTarget, 'link target');
  for (const key of pax.keys()) {
    if (key.startsWith('GNU.sparse.')) {
      throw new TarFormatError(`entry ${JSON.stringify(path)} is a PAX sparse file; sparse files are not supported in layers`, 'unsupported');
    }
  }
  return {
    path,
    type,
    mode: header.mode & 0o7777,
    uid: paxNumber(pax, 'uid') ?? header.uid,
    gid: paxNumber(pax, 'gid') ?? header.gid,
    size: paxNumber(pax, 'size') ?? header.size,
    mtime: paxNumber(pax, 'mtime', true) ?? header.mtime,
    linkTarget,
    devMajor: paxNumber(pax, 'SCHILY.devmajor') ?? header.devMajor,
    devMinor: paxNumber(pax, 'SCHILY.devminor') ?? header.devMinor,
    xattrs: paxXattrs(pax),
  };
}
