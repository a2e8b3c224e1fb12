import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeNetworkError } from './http-transport.js';
import { RegistryError } from './errors.js';

function networkError(code: string, message = code): Error {
  return Object.assign(new Error(message), { code });
}

test('socket and TLS failures become unreachable errors naming the host and a way out', () => {
  const url = new URL('https://registry.example:5000/v2/');
  const cases: [Error, RegExp][] = [
    [networkError('ENOTFOUND', 'getaddrinfo ENOTFOUND registry.example'), /^cannot resolve registry host registry\.example \(ENOTFOUND\)$/],
    [networkError('ECONNREFUSED'), /^connection to registry\.example:5000 refused: nothing listens on HTTPS port 5000$/],
    [networkError('SELF_SIGNED_CERT_IN_CHAIN', 'self-signed certificate in certificate chain'), /not trusted .* install the registry's CA as \/certs\/registry\.example:5000\/ca\.crt, or mark it insecure/],
    [networkError('EPROTO', 'write EPROTO ... wrong version number'), /TLS handshake with registry\.example:5000 failed .* mark it insecure/],
    [networkError('ECONNRESET', 'socket hang up'), /^cannot reach registry\.example:5000: socket hang up \(ECONNRESET\)$/],
  ];
  for (const [err, pattern] of cases) {
    const described = describeNetworkError(err, url, '/certs');
    assert.ok(described instanceof RegistryError);
    assert.equal(described.kind, 'unreachable');
    assert.match(described.message, pattern);
    assert.equal(described.cause, err);
  }
});

test('abort errors and registry errors pass through unchanged', () => {
  const url = new URL('http://127.0.0.1:1/');
  const abort = new DOMException('aborted', 'AbortError');
  assert.equal(describeNetworkError(abort, url, '/certs'), abort);
  const own = new RegistryError('unreachable', 'x');
  assert.equal(describeNetworkError(own, url, '/certs'), own);
});
