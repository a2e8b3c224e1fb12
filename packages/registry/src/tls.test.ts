import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@skiff/common';
import { normalizeReference } from '@skiff/reference';
import { RegistryClient } from './registry-client.js';
import { RegistryError } from './errors.js';
import { emptyRegistriesConfig } from './registries-config.js';
import { sha256 } from './testing/tar.js';
import type { Descriptor, Endpoint, ResolvedImage } from './types.js';

const logger = createLogger('registry-test', 'fatal');
const blob = Buffer.from('{"architecture":"amd64","os":"linux"}');
const desc: Descriptor = { mediaType: 'application/vnd.oci.image.config.v1+json', digest: sha256(blob), size: blob.length };

function haveOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function serveBlob(req: http.IncomingMessage, res: http.ServerResponse): void {
  if (req.url === `/v2/app/blobs/${desc.digest}`) res.writeHead(200, { 'content-length': String(blob.length) }).end(blob);
  else res.writeHead(404).end();
}

async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Loopback hosts normally get plain HTTP; these endpoints are built by hand to exercise TLS on 127.0.0.1. */
function imageAt(host: string, endpoint: Partial<Endpoint>): ResolvedImage {
  return {
    ref: normalizeReference(`${host}/app:v1`),
    endpoint: { host, repository: 'app', insecure: false, plainHttp: false, mirror: false, ...endpoint },
    topDigest: desc.digest,
    topMediaType: 'application/vnd.oci.image.manifest.v1+json',
    manifestDigest: desc.digest,
    manifest: { mediaType: 'application/vnd.oci.image.manifest.v1+json', config: desc, layers: [] },
    platform: { os: 'linux', architecture: 'amd64' },
  };
}

describe('TLS: system and certs.d trust, client certificates, insecure registries', { skip: haveOpenssl() ? false : 'openssl is not installed' }, () => {
  let dir: string;
  let certsDir: string;
  let cert: string;
  let key: string;
  const servers: http.Server[] = [];
  const clients: RegistryClient[] = [];
  const make = (): RegistryClient => {
    // An empty CA bundle: only certs.d counts, whatever the machine trusts.
    const c = new RegistryClient({ registries: emptyRegistriesConfig(), logger, certsDir, caBundlePath: join(dir, 'empty-bundle.crt'), timeouts: { connectMs: 2000, responseMs: 5000 } });
    clients.push(c);
    return c;
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'skiff-registry-tls-'));
    certsDir = join(dir, 'certs.d');
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1',
        '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')],
      { stdio: 'ignore' },
    );
    cert = await readFile(join(dir, 'cert.pem'), 'utf8');
    key = await readFile(join(dir, 'key.pem'), 'utf8');
    await writeFile(join(dir, 'empty-bundle.crt'), '');
  });

  after(async () => {
    for (const c of clients) c.close();
    for (const s of servers) {
      s.closeAllConnections();
      s.close();
    }
    await rm(dir, { recursive: true, force: true });
  });

  async function startHttps(opts: https.ServerOptions = {}): Promise<string> {
    const server = https.createServer({ key, cert, ...opts }, serveBlob);
    servers.push(server);
    return listen(server);
  }

  test('an untrusted certificate is refused with a way out; a CA in certs.d/<host>/ makes it trusted', async () => {
    const host = await startHttps();
    const err = await make().fetchBlob(imageAt(host, {}), desc).catch((e: unknown) => e);
    assert.ok(err instanceof RegistryError && err.kind === 'unreachable', String(err));
    assert.match(err.message, new RegExp(`TLS certificate of ${host} is not trusted .*${certsDir}/${host}/ca\\.crt`));

    await mkdir(join(certsDir, host), { recursive: true });
    await writeFile(join(certsDir, host, 'ca.crt'), cert);
    assert.deepEqual(await make().fetchBlob(imageAt(host, {}), desc), blob);
  });

  test('a client certificate pair in certs.d/<host>/ is presented', async () => {
    const host = await startHttps({ requestCert: true, rejectUnauthorized: true, ca: [cert] });
    await mkdir(join(certsDir, host), { recursive: true });
    await writeFile(join(certsDir, host, 'ca.crt'), cert);
    await writeFile(join(certsDir, host, 'client.cert'), cert);
    await writeFile(join(certsDir, host, 'client.key'), key);
    assert.deepEqual(await make().fetchBlob(imageAt(host, {}), desc), blob);
  });

  /** Serves the blob's path with a redirect to the same path on `target` ("https://host:port"). */
  function redirecting(target: () => string): http.RequestListener {
    return (req, res) => res.writeHead(307, { location: `${target()}${req.url}` }).end();
  }

  async function trust(host: string): Promise<void> {
    await mkdir(join(certsDir, host), { recursive: true });
    await writeFile(join(certsDir, host, 'ca.crt'), cert);
  }

  test('a redirect from HTTPS to plain HTTP is refused; HTTPS to HTTPS and HTTP to HTTP are followed', async () => {
    let plainRequests = 0;
    const plain = http.createServer((req, res) => {
      plainRequests++;
      serveBlob(req, res);
    });
    servers.push(plain);
    const plainHost = await listen(plain);

    const downgrading = https.createServer({ key, cert }, redirecting(() => `http://${plainHost}`));
    servers.push(downgrading);
    const downgradingHost = await listen(downgrading);
    await trust(downgradingHost);
    const err = await make().fetchBlob(imageAt(downgradingHost, {}), desc).catch((e: unknown) => e);
    assert.ok(err instanceof RegistryError && err.kind === 'insecure-redirect', String(err));
    assert.ok(err.message.includes(`${downgradingHost} redirected from HTTPS to plain HTTP (http://${plainHost}/v2/app/blobs/`), err.message);
    assert.equal(plainRequests, 0, 'nothing was sent in clear text');

    const target = await startHttps();
    await trust(target);
    const upgrading = https.createServer({ key, cert }, redirecting(() => `https://${target}`));
    servers.push(upgrading);
    const upgradingHost = await listen(upgrading);
    await trust(upgradingHost);
    assert.deepEqual(await make().fetchBlob(imageAt(upgradingHost, {}), desc), blob);

    const plainRedirect = http.createServer(redirecting(() => `http://${plainHost}`));
    servers.push(plainRedirect);
    const plainRedirectHost = await listen(plainRedirect);
    assert.deepEqual(await make().fetchBlob(imageAt(plainRedirectHost, { insecure: true }), desc), blob);
    assert.equal(plainRequests, 1);
  });

  test('insecure registries skip verification, and fall back to plain HTTP', async () => {
    const tlsHost = await startHttps();
    assert.deepEqual(await make().fetchBlob(imageAt(tlsHost, { insecure: true }), desc), blob);

    const plain = http.createServer(serveBlob);
    servers.push(plain);
    const plainHost = await listen(plain);
    const c = make();
    assert.deepEqual(await c.fetchBlob(imageAt(plainHost, { insecure: true }), desc), blob);
    assert.deepEqual(await c.fetchBlob(imageAt(plainHost, { insecure: true }), desc), blob);
  });
});
