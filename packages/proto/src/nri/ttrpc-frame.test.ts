import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TTRPC_MAX_PAYLOAD_BYTES, TtrpcFrameReader, TtrpcMessageType, TtrpcProtocolError, encodeTtrpcFrame } from './ttrpc-frame.js';

test('frames split at every byte boundary come out whole and in order', () => {
  const stream = Buffer.concat([
    encodeTtrpcFrame(1, TtrpcMessageType.Request, Buffer.from('first')),
    encodeTtrpcFrame(3, TtrpcMessageType.Response, Buffer.alloc(0), 2),
    encodeTtrpcFrame(5, TtrpcMessageType.Request, Buffer.from('third')),
  ]);
  for (let cut = 0; cut <= stream.length; cut++) {
    const reader = new TtrpcFrameReader();
    const frames = [...reader.push(stream.subarray(0, cut)), ...reader.push(stream.subarray(cut))];
    assert.deepEqual(
      frames.map((f) => [f.streamId, f.type, f.flags, f.payload.toString()]),
      [
        [1, 1, 0, 'first'],
        [3, 2, 2, ''],
        [5, 1, 0, 'third'],
      ],
    );
  }
});

test('the header is length, stream id, type and flags, big-endian', () => {
  assert.deepEqual([...encodeTtrpcFrame(0x01020304, TtrpcMessageType.Data, Buffer.from([9]), 4)], [0, 0, 0, 1, 1, 2, 3, 4, 3, 4, 9]);
});

test('an oversized frame is refused from its header alone, on both sides', () => {
  const header = Buffer.alloc(10);
  header.writeUInt32BE(TTRPC_MAX_PAYLOAD_BYTES + 1, 0);
  header.writeUInt8(1, 8);
  assert.throws(() => new TtrpcFrameReader().push(header), TtrpcProtocolError);
  assert.throws(() => encodeTtrpcFrame(1, TtrpcMessageType.Request, Buffer.alloc(TTRPC_MAX_PAYLOAD_BYTES + 1)), TtrpcProtocolError);
});
