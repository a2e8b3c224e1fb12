import { dataFrameHeader, FrameError, FrameReader, encodeFrame, FLAG_FIN, FLAG_UNIDIRECTIONAL, GoAwayStatus, RstStatus, Setting, type Frame } from './frames.js';
import { HeaderCompressor, HeaderDecompressor, type HeaderBlock } from './header-compression.js';

/** SPDY/3.1's initial window, for every stream and for the session. */
export const INITIAL_WINDOW = 64 * 1024;
/** Largest data frame we send: small enough to interleave streams, large enough to be cheap. */
const DATA_CHUNK = 64 * 1024;
/** A stream's `write` asks its writer to wait once this much is queued. */
const STREAM_HIGH_WATER = 256 * 1024;

/** The bytes under a SPDY connection: a TCP socket, or a WebSocket carrying a byte stream. */
export interface ByteTransport {
  /** False when the caller should wait for `transportDrained`. */
  write(bytes: Buffer): boolean;
  end(): void;
  destroy(): void;
}

export interface SpdyConnectionEvents {
  /** A stream the peer opened; it has been answered with SYN_REPLY already. */
  onStream(stream: SpdyStream): void;
  /** The connection is over (closed by either side, or failed). */
  onClose(reason: string): void;
}

/** One SPDY stream: bytes from the peer, bytes to it, FIN both ways, reset. */
export class SpdyStream {
  private dataHandler: (chunk: Buffer) => void;
  private endHandler: () => void = () => undefined;
  private resetHandler: (status: number) => void = () => undefined;
  private drainHandler: () => void = () => undefined;
  private early: Buffer[] = [];
  /** Bytes we may still send before the peer opens the window again. */
  sendWindow: number;
  queue: Buffer[] = [];
  queuedBytes = 0;
  finQueued = false;
  localClosed = false;
  remoteClosed = false;
  isReset = false;
  unackedBytes = 0;

  constructor(
    readonly id: number,
    readonly headers: HeaderBlock,
    private readonly connection: SpdyConnection,
    initialSendWindow: number,
  ) {
    this.sendWindow = initialSendWindow;
    this.dataHandler = (chunk) => this.early.push(chunk);
  }

  header(name: string): string | undefined {
    return this.headers.get(name.toLowerCase())?.split('\0')[0];
  }

  /** Data that arrived before the handler was set is handed over at once. */
  onData(handler: (chunk: Buffer) => void): void {
    this.dataHandler = handler;
    for (const chunk of this.early.splice(0)) handler(chunk);
  }
  /** The peer half-closed the stream (FIN). */
  onEnd(handler: () => void): void {
    this.endHandler = handler;
    if (this.remoteClosed) handler();
  }
  onReset(handler: (status: number) => void): void {
    this.resetHandler = handler;
  }
  onDrain(handler: () => void): void {
    this.drainHandler = handler;
  }

  /** Queues bytes for the peer; false asks the writer to wait for `onDrain`. */
  write(chunk: Buffer): boolean {
    if (this.localClosed || this.finQueued || this.isReset || chunk.length === 0) return !this.isReset;
    this.queue.push(chunk);
    this.queuedBytes += chunk.length;
    this.connection.pump();
    return this.queuedBytes < STREAM_HIGH_WATER && !this.connection.transportBlocked;
  }

  /** Half-closes our side once everything queued has been sent. */
  end(): void {
    if (this.localClosed || this.finQueued || this.isReset) return;
    this.finQueued = true;
    this.connection.pump();
  }

  reset(status: number = RstStatus.CANCEL): void {
    if (this.isReset) return;
    this.isReset = true;
    this.queue = [];
    this.queuedBytes = 0;
    this.connection.sendReset(this, status);
  }

  get writableNeedDrain(): boolean {
    return this.queuedBytes >= STREAM_HIGH_WATER || this.connection.transportBlocked;
  }

  /** @internal */
  deliver(chunk: Buffer): void {
    if (this.remoteClosed || this.isReset) return;
    this.dataHandler(chunk);
  }
  /** @internal */
  deliverEnd(): void {
    if (this.remoteClosed) return;
    this.remoteClosed = true;
    this.endHandler();
  }
  /** @internal */
  deliverReset(status: number): void {
    if (this.isReset) return;
    this.isReset = true;
    this.queue = [];
    this.queuedBytes = 0;
    this.resetHandler(status);
  }
  /** @internal */
  deliverDrain(): void {
    this.drainHandler();
  }
}

/**
 * The server end of a SPDY/3.1 connection: the client opens streams (odd ids), we answer each with
 * SYN_REPLY, carry data both ways with per-stream and per-session flow control, answer pings and
 * end with GOAWAY.
 *
 * Flow control towards the peer: we never exceed its windows once it has shown that it keeps
 * them (a WINDOW_UPDATE or SETTINGS frame). Go's spdystream, which kubectl and client-go use,
 * neither sends nor reads WINDOW_UPDATE; holding such a peer to 64 KiB would stall every stream
 * for good, so it is sent to as the kubelet does, bounded by TCP alone.
 */
export class SpdyConnection {
  private readonly compressor = new HeaderCompressor();
  private readonly decompressor = new HeaderDecompressor();
  private readonly reader = new FrameReader(this.decompressor);
  private readonly streams = new Map<number, SpdyStream>();
  private lastPeerStreamId = 0;
  private peerInitialWindow = INITIAL_WINDOW;
  private sessionSendWindow = INITIAL_WINDOW;
  private sessionUnacked = 0;
  private peerKeepsWindows = false;
  private goneAway = false;
  private closing = false;
  private closed = false;
  transportBlocked = false;
  private nextStreamId = 1;
  /** Our receive windows are reopened once half of them has been consumed. */
  private readonly updateThreshold: number;

  /**
   * `client`: this end opens the streams (odd ids), as test clients do; the server only accepts
   * them. `receiveWindow` above 64 KiB is announced with SETTINGS and a session WINDOW_UPDATE; the
   * server keeps the default, as the kubelet's sends no SETTINGS that Go clients would ignore.
   */
  constructor(
    private readonly transport: ByteTransport,
    private readonly events: SpdyConnectionEvents,
    private readonly role: 'server' | 'client' = 'server',
    receiveWindow = INITIAL_WINDOW,
    /** Streams the peer may have open at once; one more is refused with REFUSED_STREAM. */
    private readonly maxPeerStreams = Number.POSITIVE_INFINITY,
  ) {
    this.updateThreshold = receiveWindow / 2;
    if (receiveWindow !== INITIAL_WINDOW) {
      this.send({ type: 'settings', flags: 0, entries: [{ flags: 0, id: Setting.INITIAL_WINDOW_SIZE, value: receiveWindow }] });
      if (receiveWindow > INITIAL_WINDOW) this.send({ type: 'window_update', streamId: 0, delta: receiveWindow - INITIAL_WINDOW });
    }
  }

  /** Client side: opens a stream with these headers. */
  createStream(headers: HeaderBlock, fin = false): SpdyStream {
    if (this.role !== 'client') throw new Error('only the client opens streams');
    const id = this.nextStreamId;
    this.nextStreamId += 2;
    const stream = new SpdyStream(id, headers, this, this.peerInitialWindow);
    this.streams.set(id, stream);
    this.send({ type: 'syn_stream', streamId: id, associatedStreamId: 0, priority: 0, flags: fin ? FLAG_FIN : 0, headers });
    if (fin) stream.localClosed = true;
    return stream;
  }

  /** Bytes from the transport. */
  receive(chunk: Buffer): void {
    if (this.closed) return;
    let frames: Frame[];
    try {
      frames = this.reader.push(chunk);
    } catch (err) {
      this.fail(err instanceof FrameError ? err.message : `bad frame: ${(err as Error).message}`);
      return;
    }
    for (const frame of frames) {
      if (this.closed) return;
      this.handle(frame);
    }
  }

  transportDrained(): void {
    this.transportBlocked = false;
    this.pump();
    for (const stream of this.streams.values()) if (!stream.writableNeedDrain) stream.deliverDrain();
  }

  /** The transport ended or failed: every stream is over. */
  transportClosed(reason = 'connection closed by the client'): void {
    if (this.closed) return;
    this.closed = true;
    for (const stream of this.streams.values()) stream.deliverReset(RstStatus.CANCEL);
    this.streams.clear();
    this.release();
    this.events.onClose(reason);
  }

  /** Sends GOAWAY and closes the transport once every queued byte has gone out. */
  close(): void {
    if (this.closed || this.closing) return;
    this.closing = true;
    this.pump();
  }

  /** Ends at once, without waiting for queued data. */
  destroy(reason: string): void {
    if (this.closed) return;
    this.sendGoAway(GoAwayStatus.OK);
    this.transport.destroy();
    this.transportClosed(reason);
  }

  /** @internal */
  sendReset(stream: SpdyStream, status: number): void {
    this.send({ type: 'rst_stream', streamId: stream.id, status });
    this.forget(stream);
  }

  /** Sends what the windows allow, then FINs, then GOAWAY when closing. @internal */
  pump(): void {
    if (this.closed) return;
    let progress = true;
    while (progress && !this.transportBlocked) {
      progress = false;
      for (const stream of this.streams.values()) {
        if (this.transportBlocked) break;
        if (stream.queuedBytes > 0) {
          let allowed = DATA_CHUNK;
          if (this.peerKeepsWindows) allowed = Math.min(allowed, stream.sendWindow, this.sessionSendWindow);
          if (allowed <= 0) continue;
          const chunk = takeBytes(stream, allowed);
          stream.sendWindow -= chunk.length;
          this.sessionSendWindow -= chunk.length;
          const fin = stream.finQueued && stream.queuedBytes === 0;
          this.sendData(stream.id, fin ? FLAG_FIN : 0, chunk);
          if (fin) this.markLocalClosed(stream);
          progress = true;
        } else if (stream.finQueued && !stream.localClosed) {
          this.send({ type: 'data', streamId: stream.id, flags: FLAG_FIN, data: Buffer.alloc(0) });
          this.markLocalClosed(stream);
          progress = true;
        }
      }
    }
    if (this.closing && !this.closed && !this.transportBlocked && [...this.streams.values()].every((s) => s.queuedBytes === 0)) {
      this.sendGoAway(GoAwayStatus.OK);
      this.transport.end();
      this.transportClosed('connection closed');
    }
  }

  private handle(frame: Frame): void {
    switch (frame.type) {
      case 'syn_stream':
        return this.openStream(frame.streamId, frame.flags, frame.headers);
      case 'data': {
        const stream = this.streams.get(frame.streamId);
        if (!stream || stream.remoteClosed) {
          if (frame.streamId > this.lastPeerStreamId || !stream) this.send({ type: 'rst_stream', streamId: frame.streamId, status: RstStatus.INVALID_STREAM });
          return;
        }
        if (frame.data.length > 0) {
          stream.deliver(frame.data);
          this.acknowledge(stream, frame.data.length);
        }
        if (frame.flags & FLAG_FIN) this.remoteFin(stream);
        return;
      }
      case 'rst_stream': {
        const stream = this.streams.get(frame.streamId);
        if (stream) {
          this.forget(stream);
          stream.deliverReset(frame.status);
        }
        return;
      }
      case 'settings':
        for (const entry of frame.entries) {
          if (entry.id === Setting.INITIAL_WINDOW_SIZE) {
            const delta = entry.value - this.peerInitialWindow;
            this.peerInitialWindow = entry.value;
            for (const stream of this.streams.values()) stream.sendWindow += delta;
          }
        }
        this.peerKeepsWindows = true;
        this.pump();
        return;
      case 'window_update':
        this.peerKeepsWindows = true;
        if (frame.streamId === 0) this.sessionSendWindow += frame.delta;
        else {
          const stream = this.streams.get(frame.streamId);
          if (stream) stream.sendWindow += frame.delta;
        }
        this.pump();
        for (const stream of this.streams.values()) if (!stream.writableNeedDrain) stream.deliverDrain();
        return;
      case 'ping':
        // The peer's pings have the other parity than ours; ours come back and need no answer.
        if (frame.id % 2 === (this.role === 'server' ? 1 : 0)) this.send({ type: 'ping', id: frame.id });
        return;
      case 'goaway':
        this.goneAway = true;
        if (this.streams.size === 0) this.close();
        return;
      case 'headers': {
        const stream = this.streams.get(frame.streamId);
        if (stream && frame.flags & FLAG_FIN) this.remoteFin(stream);
        return;
      }
      case 'syn_reply': {
        const stream = this.streams.get(frame.streamId);
        if (!stream || this.role === 'server') this.send({ type: 'rst_stream', streamId: frame.streamId, status: RstStatus.INVALID_STREAM });
        else if (frame.flags & FLAG_FIN) this.remoteFin(stream);
        return;
      }
      case 'unknown':
        return;
    }
  }

  private openStream(id: number, flags: number, headers: HeaderBlock): void {
    if (this.goneAway || this.closing) {
      this.send({ type: 'rst_stream', streamId: id, status: RstStatus.REFUSED_STREAM });
      return;
    }
    if (this.role === 'client' || id % 2 === 0 || id <= this.lastPeerStreamId) {
      this.send({ type: 'rst_stream', streamId: id, status: this.streams.has(id) ? RstStatus.STREAM_IN_USE : RstStatus.PROTOCOL_ERROR });
      return;
    }
    this.lastPeerStreamId = id;
    if (this.streams.size >= this.maxPeerStreams) {
      this.send({ type: 'rst_stream', streamId: id, status: RstStatus.REFUSED_STREAM });
      return;
    }
    const stream = new SpdyStream(id, headers, this, this.peerInitialWindow);
    this.streams.set(id, stream);
    this.send({ type: 'syn_reply', streamId: id, flags: 0, headers: new Map() });
    if (flags & FLAG_UNIDIRECTIONAL) stream.localClosed = true;
    this.events.onStream(stream);
    if (flags & FLAG_FIN) this.remoteFin(stream);
  }

  private remoteFin(stream: SpdyStream): void {
    stream.deliverEnd();
    if (stream.localClosed) this.forget(stream);
  }

  private markLocalClosed(stream: SpdyStream): void {
    stream.localClosed = true;
    if (stream.remoteClosed) this.forget(stream);
  }

  private forget(stream: SpdyStream): void {
    this.streams.delete(stream.id);
    if (this.goneAway && this.streams.size === 0) this.close();
  }

  /** Reopens the peer's window on the stream and the session as data is taken in. */
  private acknowledge(stream: SpdyStream, bytes: number): void {
    stream.unackedBytes += bytes;
    this.sessionUnacked += bytes;
    if (stream.unackedBytes >= this.updateThreshold && !stream.remoteClosed) {
      this.send({ type: 'window_update', streamId: stream.id, delta: stream.unackedBytes });
      stream.unackedBytes = 0;
    }
    if (this.sessionUnacked >= this.updateThreshold) {
      this.send({ type: 'window_update', streamId: 0, delta: this.sessionUnacked });
      this.sessionUnacked = 0;
    }
  }

  private sendGoAway(status: number): void {
    this.send({ type: 'goaway', lastGoodStreamId: this.lastPeerStreamId, status });
  }

  /** Header and payload as two writes: the payload is not copied. */
  private sendData(streamId: number, flags: number, data: Buffer): void {
    if (this.closed) return;
    this.transport.write(dataFrameHeader(streamId, flags, data.length));
    if (!this.transport.write(data)) this.transportBlocked = true;
  }

  private send(frame: Frame): void {
    if (this.closed) return;
    if (!this.transport.write(encodeFrame(frame, this.compressor))) this.transportBlocked = true;
  }

  private fail(reason: string): void {
    if (this.closed) return;
    this.sendGoAway(GoAwayStatus.PROTOCOL_ERROR);
    this.transport.end();
    this.transportClosed(`protocol error: ${reason}`);
  }

  private release(): void {
    this.compressor.close();
    this.decompressor.close();
  }
}

function takeBytes(stream: SpdyStream, limit: number): Buffer {
  const head = stream.queue[0]!;
  let chunk: Buffer;
  if (head.length <= limit) {
    chunk = head;
    stream.queue.shift();
  } else {
    chunk = head.subarray(0, limit);
    stream.queue[0] = head.subarray(limit);
  }
  stream.queuedBytes -= chunk.length;
  return chunk;
}
