import type { Logger, PortForwardStreamRequest } from '@skiff/common/core';
import { countForwarded } from './forwarded-bytes.js';
import type { PortConnection } from './host-port-dial.js';
import { dialPodPort } from './port-forward.js';
import type { SpdyConnectionEvents, SpdyStream } from './spdy/connection.js';
import { STREAM_CREATION_TIMEOUT_MS } from './spdy-session.js';

interface StreamPair {
  data?: SpdyStream;
  error?: SpdyStream;
  timer: NodeJS.Timeout;
}

/**
 * The request id pairing an error and a data stream. Clients before request ids opened the error
 * stream, then the data stream, so the kubelet pairs stream n (error) with n + 2 (data); that
 * guess only holds while connections are not opened concurrently, as with the kubelet.
 */
export function pairId(stream: SpdyStream): string {
  const requestId = stream.header('requestID');
  if (requestId) return requestId;
  return String(stream.header('streamType') === 'data' ? stream.id - 2 : stream.id);
}

/**
 * Port-forward over SPDY (`portforward.k8s.io`): every forwarded connection is a pair of streams
 * the client opens, `error` and `data`, with `port` and `requestID` headers. Each pair gets its
 * own TCP connection in the pod's network namespace; a failure is written on the pair's error
 * stream and the session goes on.
 */
export function spdyPortForward(request: PortForwardStreamRequest, log: Logger, maxConnections: number, pairTimeoutMs = STREAM_CREATION_TIMEOUT_MS): SpdyConnectionEvents {
  const pairs = new Map<string, StreamPair>();
  const live = new Set<PortConnection>();

  const fail = (pair: StreamPair, message: string): void => {
    pair.error?.write(Buffer.from(message));
    pair.error?.end();
    pair.data?.end();
  };

  const forward = (pair: StreamPair): void => {
    const data = pair.data!;
    const error = pair.error!;
    // The client sends nothing on the error stream; it only reads it.
    error.onData(() => undefined);
    const portText = data.header('port') ?? '';
    const port = Number(portText);
    if (!/^\d+$/.test(portText) || port < 1 || port > 65535) {
      fail(pair, `invalid port ${JSON.stringify(portText)} in port-forward stream`);
      return;
    }
    if (live.size >= maxConnections) {
      fail(pair, `port-forward to pod ${request.podSandboxId}: ${maxConnections} connections are open in this session already (stream.max_port_forward_connections); close one and retry`);
      return;
    }
    const child = dialPodPort(request, port);
    live.add(child);
    let errors = '';
    child.stdout.on('data', (chunk: Buffer) => {
      if (!data.write(chunk)) child.stdout.pause();
    });
    data.onDrain(() => child.stdout.resume());
    child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString('utf8')));
    child.stdin.on('error', () => undefined);
    data.onData((chunk) => {
      if (child.stdin.destroyed) return;
      countForwarded('to_pod', chunk.length);
      child.stdin.write(chunk);
    });
    data.onEnd(() => child.stdin.end());
    data.onReset(() => child.kill('SIGKILL'));
    error.onReset(() => child.kill('SIGKILL'));
    child.on('error', (err) => errors += err.message);
    child.on('close', (code) => {
      live.delete(child);
      if (code !== 0) {
        const reason = errors.trim() || `exit code ${code}`;
        error.write(Buffer.from(`error forwarding port ${port} to pod ${request.podSandboxId}: ${reason}`));
      }
      error.end();
      data.end();
    });
  };

  return {
    onStream(stream) {
      const type = stream.header('streamType');
      if (type !== 'data' && type !== 'error') {
        stream.reset();
        return;
      }
      const id = pairId(stream);
      let pair = pairs.get(id);
      if (!pair) {
        const created: StreamPair = {
          timer: setTimeout(() => {
            pairs.delete(id);
            fail(created, `timed out waiting for the other stream of port-forward request ${id}`);
            created.data?.reset();
            created.error?.reset();
          }, pairTimeoutMs),
        };
        created.timer.unref();
        pair = created;
        pairs.set(id, pair);
      }
      if (pair[type]) {
        stream.reset();
        return;
      }
      pair[type] = stream;
      if (pair.data && pair.error) {
        clearTimeout(pair.timer);
        pairs.delete(id);
        forward(pair);
      }
    },
    onClose(reason) {
      for (const pair of pairs.values()) clearTimeout(pair.timer);
      pairs.clear();
      for (const child of live) child.kill('SIGKILL');
      log.info({ sandbox: request.podSandboxId, reason }, 'port-forward ended');
    },
  };
}
