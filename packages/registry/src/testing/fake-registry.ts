import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  url: URL;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export type Handler = (req: RecordedRequest, res: http.ServerResponse) => unknown;

/** A node:http server on 127.0.0.1 that records every request and answers with `handler`. */
export class FakeServer {
  readonly requests: RecordedRequest[] = [];
  private constructor(
    private readonly server: http.Server,
    readonly host: string,
  ) {}

  static async start(handler: Handler): Promise<FakeServer> {
    let self: FakeServer | undefined;
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const recorded: RecordedRequest = {
          method: req.method ?? 'GET',
          url: new URL(req.url ?? '/', `http://${self!.host}`),
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        };
        self!.requests.push(recorded);
        Promise.resolve(handler(recorded, res)).catch((err: unknown) => {
          res.statusCode = 500;
          res.end(String(err));
        });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    self = new FakeServer(server, `127.0.0.1:${port}`);
    return self;
  }

  requestsTo(pathPrefix: string): RecordedRequest[] {
    return this.requests.filter((r) => r.url.pathname.startsWith(pathPrefix));
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

export function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const bytes = Buffer.from(JSON.stringify(body));
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(bytes.length), ...headers });
  res.end(bytes);
}

export function registryError(res: http.ServerResponse, status: number, code: string, message: string, headers: Record<string, string> = {}): void {
  sendJson(res, status, { errors: [{ code, message, detail: null }] }, headers);
}
