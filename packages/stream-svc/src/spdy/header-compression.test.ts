import { test } from 'node:test';
import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { SPDY3_DICTIONARY } from './dictionary.js';
import { encodeHeaderBlock, HeaderCompressionError, HeaderCompressor, HeaderDecompressor, MAX_HEADER_BLOCK } from './header-compression.js';

/** One block deflated by Node's zlib with the SPDY dictionary and a sync flush, as a fresh client sends its first. */
function nodeDeflate(block: Buffer): Buffer {
  return zlib.deflateSync(block, { dictionary: SPDY3_DICTIONARY, finishFlush: zlib.constants.Z_SYNC_FLUSH });
}

test('a compression bomb is refused after inflating at most a chunk past the cap, and the context stays refused', () => {
  const bomb = encodeHeaderBlock(new Map([['x-bomb', 'a'.repeat(10 * 1024 * 1024)]]));
  const compressed = nodeDeflate(bomb);
  assert.ok(compressed.length < 64 * 1024, `the bomb is small on the wire (${compressed.length} bytes)`);
  const decompressor = new HeaderDecompressor();
  assert.throws(() => decompressor.decompress(compressed), (err: Error) => err instanceof HeaderCompressionError && err.message.includes(`more than ${MAX_HEADER_BLOCK} bytes`));
  assert.throws(() => decompressor.decompress(new HeaderCompressor().compress(new Map([['a', 'b']]))), HeaderCompressionError);
});

test('a block just under the cap inflates', () => {
  const headers = new Map([['x-big', 'b'.repeat(MAX_HEADER_BLOCK - 100)]]);
  assert.deepEqual(new HeaderDecompressor().decompress(new HeaderCompressor().compress(headers)), headers);
});

test('2000 header blocks round-trip through one context per direction, and real zlib reads what we write', () => {
  const compressor = new HeaderCompressor();
  const decompressor = new HeaderDecompressor();
  const wire: Buffer[] = [];
  const sent: Array<Map<string, string>> = [];
  for (let i = 0; i < 2000; i++) {
    const headers = new Map([['streamtype', ['error', 'stdin', 'stdout', 'data'][i % 4]!], ['port', String(8000 + (i % 7))], ['requestid', String(i)]]);
    if (i % 100 === 0) headers.set('x-note', 'n'.repeat(i));
    const block = compressor.compress(headers);
    wire.push(block);
    sent.push(headers);
    assert.deepEqual(decompressor.decompress(block), headers, `block ${i}`);
  }
  // Node's zlib, fed the whole direction at once, yields the concatenated blocks.
  const inflated = zlib.inflateSync(Buffer.concat(wire), { dictionary: SPDY3_DICTIONARY, finishFlush: zlib.constants.Z_SYNC_FLUSH });
  assert.ok(inflated.equals(Buffer.concat(sent.map((h) => encodeHeaderBlock(h)))));
});

test('garbage is a HeaderCompressionError, not a crash', () => {
  assert.throws(() => new HeaderDecompressor().decompress(Buffer.from('this is not zlib at all')), HeaderCompressionError);
  assert.throws(() => new HeaderDecompressor().decompress(Buffer.from([0x78])), HeaderCompressionError);
});
