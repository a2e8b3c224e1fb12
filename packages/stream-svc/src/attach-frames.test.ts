import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FrameReader, resizeMessage } from './attach-frames.js';

function frame(type: number, data: string): Buffer {
  const body = Buffer.from(data);
  const header = Buffer.alloc(5);
  header[0] = type;
  header.writeUInt32BE(body.length, 1);
  return Buffer.concat([header, body]);
}

test('frames split across chunks come out whole, in order', () => {
  const wire = Buffer.concat([frame(0, ''), frame(2, 'hello'), frame(3, 'oops'), frame(2, 'x'.repeat(9000))]);
  for (const step of [1, 3, 7, 4096, wire.length]) {
    const reader = new FrameReader();
    const frames = [];
    for (let i = 0; i < wire.length; i += step) frames.push(...reader.push(wire.subarray(i, i + step)));
    assert.deepEqual(frames.map((f) => [f.type, f.data.toString()]), [[0, ''], [2, 'hello'], [3, 'oops'], [2, 'x'.repeat(9000)]], `chunks of ${step}`);
    assert.equal(reader.buffered, 0);
  }
});

test('an incomplete frame is held until its last byte arrives', () => {
  const reader = new FrameReader();
  const wire = frame(1, 'abcdef');
  assert.deepEqual(reader.push(wire.subarray(0, 8)), []);
  assert.equal(reader.buffered, 8);
  const [f] = reader.push(wire.subarray(8));
  assert.equal(f?.data.toString(), 'abcdef');
});

test('frame data does not alias later input', () => {
  const reader = new FrameReader();
  const chunk = Buffer.concat([frame(1, 'keep'), frame(1, 'next').subarray(0, 3)]);
  const [f] = reader.push(chunk);
  chunk.fill(0);
  assert.equal(f?.data.toString(), 'keep');
});

test('resize messages follow conmon\'s control fifo format', () => {
  assert.equal(resizeMessage({ width: 80, height: 24 }), '1 24 80\n');
  assert.equal(resizeMessage({ width: 132.7, height: 50 }), '1 50 132\n');
  assert.equal(resizeMessage({ width: -5, height: 70000 }), '1 65535 0\n');
});
