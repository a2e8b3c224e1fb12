import type { Socket } from 'node:net';
import { TTRPC_HEADER_BYTES, TTRPC_MAX_PAYLOAD_BYTES, TtrpcProtocolError } from './ttrpc-frame.js';

/**
 * NRI's connection multiplexer: one unix connection carries several byte streams, each chunk an
 * 8-byte header (connection id and payload length, big-endian uint32) and the payload. Id 1 carries
 * the ttrpc service the plugin serves, id 2 the one the runtime serves.
 */
export const MUX_HEADER_BYTES = 8;
export const MUX_MAX_PAYLOAD_BYTES = TTRPC_HEADER_BYTES + TTRPC_MAX_PAYLOAD_BYTES;
/**
 * A ttrpc message goes as at most two chunks, as Go's ttrpc writes it through its 4096-byte
 * bufio.Writer: its first 4096 bytes, then the rest in one. containerd/nri's Go multiplexer hands a
 * reader one whole chunk per read and fails the read (ENOMEM) when the reader's buffer is smaller:
 * ttrpc reads a message's header through a 4096-byte bufio.Reader (the first chunk fits), then the
 * rest of a large message straight into a buffer of the message's size (the second fits). It also
 * queues at most 256 chunks a connection ahead of its reader and closes the whole connection
 * beyond that, so a message must never go as many small chunks: a 3 MiB Synchronize request in
 * 4 KiB chunks was 768 of them, and a plugin busy elsewhere lost its connection.
 */
export const MUX_WRITE_CHUNK_BYTES = 4096;

export const MuxConnId = { PluginService: 1, RuntimeService: 2 } as const;
export type MuxConnId = (typeof MuxConnId)[keyof typeof MuxConnId];

export interface MuxChannel {
  write(bytes: Buffer): void;
  onData(listener: (bytes: Buffer) => void): void;
}

/**
 * Demultiplexes a socket into its two channels. A chunk for another id, or one announced larger
 * than a whole ttrpc message, is a protocol error: the socket is destroyed and onClose listeners
 * get the reason. Nothing is buffered beyond one chunk.
 */
export class NriMux {
  private readonly listeners = new Map<number, (bytes: Buffer) => void>();
  private readonly closeListeners: ((reason: Error | null) => void)[] = [];
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private closed = false;

  constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      try {
        this.receive(chunk);
      } catch (err) {
        this.close(err instanceof Error ? err : new Error(String(err)));
      }
    });
    socket.on('error', (err) => this.close(err));
    socket.on('close', () => this.close(null));
  }

  channel(id: MuxConnId): MuxChannel {
    return {
      write: (bytes) => this.write(id, bytes),
      onData: (listener) => {
        this.listeners.set(id, listener);
      },
    };
  }

  onClose(listener: (reason: Error | null) => void): void {
    if (this.closed) listener(null);
    else this.closeListeners.push(listener);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  close(reason: Error | null = null): void {
    if (this.closed) return;
    this.closed = true;
    this.socket.destroy();
    this.pending = [];
    for (const listener of this.closeListeners.splice(0)) listener(reason);
  }

  /** Writes one whole ttrpc message (see MUX_WRITE_CHUNK_BYTES). */
  private write(id: number, bytes: Buffer): void {
    if (this.closed) return;
    const first = bytes.subarray(0, MUX_WRITE_CHUNK_BYTES);
    this.writeChunk(id, first);
    if (bytes.length > first.length) this.writeChunk(id, bytes.subarray(first.length));
  }

  private writeChunk(id: number, part: Buffer): void {
    const header = Buffer.allocUnsafe(MUX_HEADER_BYTES);
    header.writeUInt32BE(id, 0);
    header.writeUInt32BE(part.length, 4);
    // Corked, header and part leave in one writev, and the part (MiBs of a large Synchronize) is
    // never copied in behind its header.
    this.socket.cork();
    this.socket.write(header);
    this.socket.write(part);
    this.socket.uncork();
  }

  private receive(chunk: Buffer): void {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    while (!this.closed && this.pendingBytes >= MUX_HEADER_BYTES) {
      const head = this.contiguous(MUX_HEADER_BYTES);
      const id = head.readUInt32BE(0);
      const length = head.readUInt32BE(4);
      if (id !== MuxConnId.PluginService && id !== MuxConnId.RuntimeService) {
        throw new TtrpcProtocolError(`peer sent data for multiplexed connection ${id}; only 1 and 2 exist`);
      }
      if (length > MUX_MAX_PAYLOAD_BYTES) {
        throw new TtrpcProtocolError(`peer announced a multiplexed chunk of ${length} bytes (limit ${MUX_MAX_PAYLOAD_BYTES})`);
      }
      if (this.pendingBytes < MUX_HEADER_BYTES + length) return;
      const whole = this.contiguous(MUX_HEADER_BYTES + length); // may hold the next chunks too
      this.consume(MUX_HEADER_BYTES + length);
      const listener = this.listeners.get(id);
      if (!listener) throw new TtrpcProtocolError(`peer sent data for multiplexed connection ${id}, which nothing serves here`);
      if (length > 0) listener(Buffer.from(whole.subarray(MUX_HEADER_BYTES, MUX_HEADER_BYTES + length)));
    }
  }

  private contiguous(n: number): Buffer {
    if (this.pending[0]!.length < n) this.pending = [Buffer.concat(this.pending)];
    return this.pending[0]!;
  }

  private consume(n: number): void {
    const first = this.pending[0]!;
    const rest = first.subarray(n);
    if (rest.length > 0) this.pending[0] = rest;
    else this.pending.shift();
    this.pendingBytes -= n;
  }
}
