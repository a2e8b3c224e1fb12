import type { HeaderBlock, HeaderCompressor, HeaderDecompressor } from './header-compression.js';

export const SPDY_VERSION = 3;
export const FRAME_HEADER_BYTES = 8;
/** Data frames carry at most 2^24 - 1 bytes; we send smaller ones to keep streams interleaved. */
export const MAX_FRAME_PAYLOAD = 0xffffff;
/**
 * Largest frame taken from a peer: a frame is held whole until it has arrived, and peers send data
 * in far smaller frames (our receive window is 64 KiB) and header blocks under 64 KiB.
 */
export const MAX_RECEIVED_FRAME = 1024 * 1024;

export const FLAG_FIN = 0x01;
export const FLAG_UNIDIRECTIONAL = 0x02;

export const ControlType = {
  SYN_STREAM: 1,
  SYN_REPLY: 2,
  RST_STREAM: 3,
  SETTINGS: 4,
  PING: 6,
  GOAWAY: 7,
  HEADERS: 8,
  WINDOW_UPDATE: 9,
} as const;

/** RST_STREAM status codes. */
export const RstStatus = {
  PROTOCOL_ERROR: 1,
  INVALID_STREAM: 2,
  REFUSED_STREAM: 3,
  UNSUPPORTED_VERSION: 4,
  CANCEL: 5,
  INTERNAL_ERROR: 6,
  FLOW_CONTROL_ERROR: 7,
  STREAM_IN_USE: 8,
  STREAM_ALREADY_CLOSED: 9,
  FRAME_TOO_LARGE: 11,
} as const;

export const GoAwayStatus = { OK: 0, PROTOCOL_ERROR: 1, INTERNAL_ERROR: 2 } as const;

export const Setting = { INITIAL_WINDOW_SIZE: 7 } as const;

export type Frame =
  | { type: 'data'; streamId: number; flags: number; data: Buffer }
  | { type: 'syn_stream'; streamId: number; associatedStreamId: number; priority: number; flags: number; headers: HeaderBlock }
  | { type: 'syn_reply'; streamId: number; flags: number; headers: HeaderBlock }
  | { type: 'rst_stream'; streamId: number; status: number }
  | { type: 'settings'; flags: number; entries: { flags: number; id: number; value: number }[] }
  | { type: 'ping'; id: number }
  | { type: 'goaway'; lastGoodStreamId: number; status: number }
  | { type: 'headers'; streamId: number; flags: number; headers: HeaderBlock }
  | { type: 'window_update'; streamId: number; delta: number }
  /** A control frame type we do not know; SPDY says to ignore it. */
  | { type: 'unknown'; controlType: number };

export class FrameError extends Error {}

const STREAM_ID_MASK = 0x7fffffff;

function controlHeader(type: number, flags: number, length: number): Buffer {
  const b = Buffer.alloc(FRAME_HEADER_BYTES);
  b.writeUInt16BE(0x8000 | SPDY_VERSION, 0);
  b.writeUInt16BE(type, 2);
  b.writeUInt32BE(((flags & 0xff) << 24) | length, 4);
  return b;
}

function control(type: number, flags: number, payload: Buffer): Buffer {
  if (payload.length > MAX_FRAME_PAYLOAD) throw new FrameError(`control frame of ${payload.length} bytes is too large`);
  return Buffer.concat([controlHeader(type, flags, payload.length), payload]);
}

function words(...values: number[]): Buffer {
  const b = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => b.writeUInt32BE(v >>> 0, i * 4));
  return b;
}

/** The 8 bytes ahead of a data frame's payload, for writing the payload without copying it. */
export function dataFrameHeader(streamId: number, flags: number, length: number): Buffer {
  if (length > MAX_FRAME_PAYLOAD) throw new FrameError(`data frame of ${length} bytes is too large`);
  const header = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
  header.writeUInt32BE(streamId & STREAM_ID_MASK, 0);
  header.writeUInt32BE(((flags & 0xff) << 24) | length, 4);
  return header;
}

/** Serialises one frame; header blocks go through the connection's compressor, in send order. */
export function encodeFrame(frame: Frame, compressor: HeaderCompressor): Buffer {
  switch (frame.type) {
    case 'data':
      return Buffer.concat([dataFrameHeader(frame.streamId, frame.flags, frame.data.length), frame.data]);
    case 'syn_stream': {
      const fixed = Buffer.alloc(10);
      fixed.writeUInt32BE(frame.streamId & STREAM_ID_MASK, 0);
      fixed.writeUInt32BE(frame.associatedStreamId & STREAM_ID_MASK, 4);
      fixed.writeUInt8((frame.priority & 0x7) << 5, 8);
      return control(ControlType.SYN_STREAM, frame.flags, Buffer.concat([fixed, compressor.compress(frame.headers)]));
    }
    case 'syn_reply':
      return control(ControlType.SYN_REPLY, frame.flags, Buffer.concat([words(frame.streamId & STREAM_ID_MASK), compressor.compress(frame.headers)]));
    case 'headers':
      return control(ControlType.HEADERS, frame.flags, Buffer.concat([words(frame.streamId & STREAM_ID_MASK), compressor.compress(frame.headers)]));
    case 'rst_stream':
      return control(ControlType.RST_STREAM, 0, words(frame.streamId & STREAM_ID_MASK, frame.status));
    case 'settings': {
      const body = Buffer.alloc(4 + frame.entries.length * 8);
      body.writeUInt32BE(frame.entries.length, 0);
      frame.entries.forEach((e, i) => {
        body.writeUInt32BE(((e.flags & 0xff) << 24) | (e.id & 0xffffff), 4 + i * 8);
        body.writeUInt32BE(e.value >>> 0, 8 + i * 8);
      });
      return control(ControlType.SETTINGS, frame.flags, body);
    }
    case 'ping':
      return control(ControlType.PING, 0, words(frame.id));
    case 'goaway':
      return control(ControlType.GOAWAY, 0, words(frame.lastGoodStreamId & STREAM_ID_MASK, frame.status));
    case 'window_update':
      return control(ControlType.WINDOW_UPDATE, 0, words(frame.streamId & STREAM_ID_MASK, frame.delta & STREAM_ID_MASK));
    case 'unknown':
      throw new FrameError('cannot send a frame of unknown type');
  }
}

/**
 * Splits a byte stream into frames. Bytes may arrive in any pieces; `push` returns every frame
 * completed so far. Header blocks are inflated here, in arrival order, as SPDY requires.
 */
export class FrameReader {
  private buffered: Buffer[] = [];
  private bufferedBytes = 0;

  constructor(private readonly decompressor: HeaderDecompressor) {}

  push(chunk: Buffer): Frame[] {
    if (chunk.length > 0) {
      this.buffered.push(chunk);
      this.bufferedBytes += chunk.length;
    }
    const frames: Frame[] = [];
    for (;;) {
      if (this.bufferedBytes < FRAME_HEADER_BYTES) break;
      const head = this.peek(FRAME_HEADER_BYTES);
      const length = head.readUInt32BE(4) & 0xffffff;
      if (length > MAX_RECEIVED_FRAME) throw new FrameError(`frame of ${length} bytes is larger than ${MAX_RECEIVED_FRAME}`);
      if (this.bufferedBytes < FRAME_HEADER_BYTES + length) break;
      const bytes = this.take(FRAME_HEADER_BYTES + length);
      frames.push(this.decode(bytes));
    }
    return frames;
  }

  private peek(n: number): Buffer {
    this.gather(n);
    return this.buffered[0]!.subarray(0, n);
  }

  /** Joins just enough leading chunks for the first to hold `n` bytes. */
  private gather(n: number): void {
    if (this.buffered[0]!.length >= n) return;
    let count = 0;
    let bytes = 0;
    while (bytes < n) bytes += this.buffered[count++]!.length;
    this.buffered.splice(0, count, Buffer.concat(this.buffered.slice(0, count), bytes));
  }

  private take(n: number): Buffer {
    this.gather(n);
    const first = this.buffered[0]!;
    const out = first.subarray(0, n);
    if (first.length === n) this.buffered.shift();
    else this.buffered[0] = first.subarray(n);
    this.bufferedBytes -= n;
    return out;
  }

  private decode(bytes: Buffer): Frame {
    const flags = bytes[4]!;
    const payload = bytes.subarray(FRAME_HEADER_BYTES);
    if ((bytes[0]! & 0x80) === 0) {
      return { type: 'data', streamId: bytes.readUInt32BE(0) & STREAM_ID_MASK, flags, data: payload };
    }
    const version = bytes.readUInt16BE(0) & 0x7fff;
    if (version !== SPDY_VERSION) throw new FrameError(`SPDY version ${version} is not supported (only 3)`);
    const type = bytes.readUInt16BE(2);
    const need = (n: number): void => {
      if (payload.length < n) throw new FrameError(`control frame ${type} is too short (${payload.length} bytes)`);
    };
    switch (type) {
      case ControlType.SYN_STREAM:
        need(10);
        return {
          type: 'syn_stream',
          streamId: payload.readUInt32BE(0) & STREAM_ID_MASK,
          associatedStreamId: payload.readUInt32BE(4) & STREAM_ID_MASK,
          priority: payload[8]! >> 5,
          flags,
          headers: this.decompressor.decompress(payload.subarray(10)),
        };
      case ControlType.SYN_REPLY:
        need(4);
        return { type: 'syn_reply', streamId: payload.readUInt32BE(0) & STREAM_ID_MASK, flags, headers: this.decompressor.decompress(payload.subarray(4)) };
      case ControlType.HEADERS:
        need(4);
        return { type: 'headers', streamId: payload.readUInt32BE(0) & STREAM_ID_MASK, flags, headers: this.decompressor.decompress(payload.subarray(4)) };
      case ControlType.RST_STREAM:
        need(8);
        return { type: 'rst_stream', streamId: payload.readUInt32BE(0) & STREAM_ID_MASK, status: payload.readUInt32BE(4) };
      case ControlType.SETTINGS: {
        need(4);
        const count = payload.readUInt32BE(0);
        need(4 + count * 8);
        const entries = [];
        for (let i = 0; i < count; i++) {
          const idWord = payload.readUInt32BE(4 + i * 8);
          entries.push({ flags: idWord >>> 24, id: idWord & 0xffffff, value: payload.readUInt32BE(8 + i * 8) });
        }
        return { type: 'settings', flags, entries };
      }
      case ControlType.PING:
        need(4);
        return { type: 'ping', id: payload.readUInt32BE(0) };
      case ControlType.GOAWAY:
        need(4);
        return { type: 'goaway', lastGoodStreamId: payload.readUInt32BE(0) & STREAM_ID_MASK, status: payload.length >= 8 ? payload.readUInt32BE(4) : 0 };
      case ControlType.WINDOW_UPDATE:
        need(8);
        return { type: 'window_update', streamId: payload.readUInt32BE(0) & STREAM_ID_MASK, delta: payload.readUInt32BE(4) & STREAM_ID_MASK };
      default:
        return { type: 'unknown', controlType: type };
    }
  }
}
