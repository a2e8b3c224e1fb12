import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { boundedStatusMessage } from './grpc-status.js';

describe('status messages', () => {
  it('keep ordinary messages as they are', () => {
    const message = 'container "abc" not found: no such file /var/lib/skiff/containers/abc';
    assert.equal(boundedStatusMessage(message), message);
  });

  it('shorten a huge value the client sent, saying how much was left out', () => {
    const bounded = boundedStatusMessage(`image "${'x'.repeat(65536)}" is not a valid reference`);
    assert.ok(bounded.length < 300, `${bounded.length} characters`);
    assert.match(bounded, /^image "x{99}…\[65438 more characters\] is not a valid reference$/);
  });

  it('cap a message made of many long words', () => {
    const bounded = boundedStatusMessage(Array.from({ length: 100 }, () => 'y'.repeat(200)).join(' '));
    assert.ok(bounded.length <= 2048 + 40);
    assert.match(bounded, /more characters\]$/);
  });
});
