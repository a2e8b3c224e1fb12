/**
 * The part of a Kubernetes API server that kubectl needs for `exec` and `port-forward` against
 * Skiff: it answers the pod GET, turns the exec/attach/portforward upgrade into a CRI Exec, Attach
 * or PortForward call, and relays the upgrade, bytes unchanged, to the stream URL, as the API
 * server and kubelet do. One pod, named by the caller, maps to one sandbox and one container.
 * Each upgrade is recorded, so that a test can tell which protocol the client spoke.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { callUnary, type RuntimeServiceClient } from '@skiff/proto';

export interface FixturePod {
  name: string;
  sandboxId: string;
  containerId: string;
  /** The container was created with a terminal and stdin (kubectl attach reads these). */
  tty?: boolean;
  stdin?: boolean;
}

export interface RecordedUpgrade {
  subresource: string;
  /** The Upgrade header: SPDY/3.1 or websocket. */
  upgrade: string;
  /** X-Stream-Protocol-Version (SPDY) or Sec-WebSocket-Protocol (WebSocket) offers. */
  protocols: string;
}

export interface ApiServerFixture {
  url: string;
  upgrades: RecordedUpgrade[];
  close(): Promise<void>;
}

function podJson(pod: FixturePod): string {
  return JSON.stringify({
    kind: 'Pod',
    apiVersion: 'v1',
    metadata: { name: pod.name, namespace: 'default', uid: pod.sandboxId },
    spec: { containers: [{ name: 'app', image: 'busybox', tty: pod.tty ?? false, stdin: pod.stdin ?? false }] },
    status: { phase: 'Running', containerStatuses: [{ name: 'app', ready: true, containerID: `skiff://${pod.containerId}` }] },
  });
}

/** Relays an upgrade request to `target` (a stream URL) and then bytes both ways. */
function relayUpgrade(req: IncomingMessage, client: Duplex, head: Buffer, target: string): void {
  const url = new URL(target);
  const upstream = connect(Number(url.port), url.hostname);
  upstream.setNoDelay(true);
  const lines = [`${req.method} ${url.pathname} HTTP/1.1`];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!;
    if (name.toLowerCase() === 'host') lines.push(`Host: ${url.host}`);
    else lines.push(`${name}: ${req.rawHeaders[i + 1]}`);
  }
  upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
  if (head.length > 0) upstream.write(head);
  upstream.pipe(client);
  client.pipe(upstream);
  const end = (): void => {
    upstream.destroy();
    client.destroy();
  };
  upstream.on('error', end);
  client.on('error', end);
  upstream.on('close', end);
  client.on('close', end);
}

export async function startApiServerFixture(runtime: RuntimeServiceClient, pod: FixturePod): Promise<ApiServerFixture> {
  const podPath = `/api/v1/namespaces/default/pods/${pod.name}`;
  const upgrades: RecordedUpgrade[] = [];
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const json = (body: unknown): void => void res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
    if (req.method === 'GET' && path === podPath) {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(podJson(pod));
      return;
    }
    // Discovery, as kubectl asks before it names a resource.
    if (path === '/api') return json({ kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '127.0.0.1' }] });
    if (path === '/apis') return json({ kind: 'APIGroupList', apiVersion: 'v1', groups: [] });
    if (path === '/api/v1') {
      return json({
        kind: 'APIResourceList',
        groupVersion: 'v1',
        resources: [
          { name: 'pods', singularName: '', namespaced: true, kind: 'Pod', verbs: ['get', 'list'], shortNames: ['po'] },
          { name: 'pods/exec', singularName: '', namespaced: true, kind: 'PodExecOptions', verbs: ['create', 'get'] },
          { name: 'pods/attach', singularName: '', namespaced: true, kind: 'PodAttachOptions', verbs: ['create', 'get'] },
          { name: 'pods/portforward', singularName: '', namespaced: true, kind: 'PodPortForwardOptions', verbs: ['create', 'get'] },
        ],
      });
    }
    res.writeHead(404, { 'Content-Type': 'application/json' }).end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 }));
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const u = new URL(req.url ?? '/', 'http://x');
    const flag = (name: string): boolean => u.searchParams.get(name) === 'true' || u.searchParams.get(name) === '1';
    upgrades.push({
      subresource: u.pathname.slice(podPath.length + 1),
      upgrade: String(req.headers['upgrade'] ?? ''),
      protocols: req.headersDistinct['x-stream-protocol-version']?.join(', ') ?? String(req.headers['sec-websocket-protocol'] ?? ''),
    });
    const answer = async (): Promise<string> => {
      if (u.pathname === `${podPath}/exec`) {
        const cmd = u.searchParams.getAll('command');
        return (await callUnary(runtime, 'Exec', { container_id: pod.containerId, cmd, stdin: flag('stdin'), stdout: flag('stdout'), stderr: flag('stderr'), tty: flag('tty') })).url;
      }
      if (u.pathname === `${podPath}/attach`) {
        return (await callUnary(runtime, 'Attach', { container_id: pod.containerId, stdin: flag('stdin'), stdout: flag('stdout'), stderr: flag('stderr'), tty: flag('tty') })).url;
      }
      if (u.pathname === `${podPath}/portforward`) return (await callUnary(runtime, 'PortForward', { pod_sandbox_id: pod.sandboxId, port: [] })).url;
      throw new Error(`no such subresource: ${u.pathname}`);
    };
    socket.on('error', () => undefined);
    answer().then(
      (target) => relayUpgrade(req, socket, head, target),
      (err: Error) => socket.end(`HTTP/1.1 500 Internal Server Error\r\nContent-Length: ${Buffer.byteLength(err.message)}\r\nConnection: close\r\n\r\n${err.message}`),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    upgrades,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
