/**
 * ttrpc's framing: every message is a 10-byte header (payload length and stream id as big-endian
 * uint32, message type, flags) followed by the payload, a protobuf Request or Response.
 */
export const TTRPC_HEADER_BYTES = 10;
/** ttrpc refuses larger payloads; so does Skiff, by closing the connection. */
export const TTRPC_MAX_PAYLOAD_BYTES = 4 << 20;

export const TtrpcMessageType = { Request: 1, Response: 2, Data: 3 } as const;
export type TtrpcMessageType = (typeof TtrpcMessageType)[keyof typeof TtrpcMessageType];

export interface TtrpcFrame {
  streamId: number;
  type: number;
  flags: number;
  payload: Buffer;
}

export class TtrpcProtocolError extends Error {}

export function encodeTtrpcFrame(streamId: number, type: TtrpcMessageType, payload: Uint8Array, flags = 0): Buffer {
  if (payload.length > TTRPC_MAX_PAYLOAD_BYTES) {
    throw new TtrpcProtocolError(`a ttrpc message of ${payload.length} bytes exceeds the limit of ${TTRPC_MAX_PAYLOAD_BYTES}`);
  }
  const frame = Buffer.allocUnsafe(TTRPC_HEADER_BYTES + payload.length);
  frame.writeUInt32BE(payload.length, 0);
  frame.writeUInt32BE(streamId, 4);
  frame.writeUInt8(type, 8);
  frame.writeUInt8(flags, 9);
  frame.set(payload, TTRPC_HEADER_BYTES);
  return frame;
}

/**
 * Cuts a byte stream into ttrpc frames. It holds at most one frame's bytes: a header announcing
 * more than the limit, or an unknown message type, throws TtrpcProtocolError before anything of
 * its payload is kept.
 */
export class TtrpcFrameReader {
  private chunks: Buffer[] = [];
  private buffered = 0;

  push(chunk: Buffer): TtrpcFrame[] {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const frames: TtrpcFrame[] = [];
    for (;;) {
      if (this.buffered < TTRPC_HEADER_BYTES) break;
      const header = this.peek(TTRPC_HEADER_BYTES);
      const length = header.readUInt32BE(0);
      const type = header.readUInt8(8);
      if (length > TTRPC_MAX_PAYLOAD_BYTES) {
        throw new TtrpcProtocolError(`peer announced a ttrpc message of ${length} bytes (limit ${TTRPC_MAX_PAYLOAD_BYTES})`);
      }
      if (type !== TtrpcMessageType.Request && type !== TtrpcMessageType.Response && type !== TtrpcMessageType.Data) {
        throw new TtrpcProtocolError(`peer sent a ttrpc message of unknown type ${type}`);
      }
      if (this.buffered < TTRPC_HEADER_BYTES + length) break;
      const whole = this.take(TTRPC_HEADER_BYTES + length);
      frames.push({ streamId: whole.readUInt32BE(4), type, flags: whole.readUInt8(9), payload: whole.subarray(TTRPC_HEADER_BYTES) });
    }
    return frames;
  }

  private peek(n: number): Buffer {
    if (this.chunks[0]!.length < n) this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0]!.subarray(0, n);
  }

  private take(n: number): Buffer {
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const rest = all.subarray(n);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.buffered = rest.length;
    return all.subarray(0, n);
  }
}
