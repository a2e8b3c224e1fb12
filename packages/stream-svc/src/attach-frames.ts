import type { TerminalSize } from './session.js';

/** Frame types the attach relay writes: 0 once connected, then conmon's pipe byte per packet (conmon numbers stdin 1, stdout 2, stderr 3). */
export const FRAME_CONNECTED = 0;
export const FRAME_STDOUT = 2;
export const FRAME_STDERR = 3;

export interface AttachFrame {
  type: number;
  data: Buffer;
}

const HEADER_BYTES = 5;

/**
 * Splits the relay's stdout back into conmon's packets: each frame is a type byte, a big-endian
 * u32 length and the data. Bytes arrive in arbitrary chunks; a frame is returned once complete.
 */
export class FrameReader {
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  push(chunk: Buffer): AttachFrame[] {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    let buffer = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.pendingBytes);
    const frames: AttachFrame[] = [];
    while (buffer.length >= HEADER_BYTES) {
      const length = buffer.readUInt32BE(1);
      if (buffer.length < HEADER_BYTES + length) break;
      frames.push({ type: buffer[0]!, data: Buffer.from(buffer.subarray(HEADER_BYTES, HEADER_BYTES + length)) });
      buffer = buffer.subarray(HEADER_BYTES + length);
    }
    this.pending = buffer.length > 0 ? [Buffer.from(buffer)] : [];
    this.pendingBytes = buffer.length;
    return frames;
  }

  /** Bytes of an incomplete frame still held. */
  get buffered(): number {
    return this.pendingBytes;
  }
}

/** conmon's control fifo message for a terminal resize: `1 <height> <width>\n`. */
export function resizeMessage(size: TerminalSize): string {
  const height = Math.max(0, Math.min(0xffff, Math.trunc(size.height)));
  const width = Math.max(0, Math.min(0xffff, Math.trunc(size.width)));
  return `1 ${height} ${width}\n`;
}
