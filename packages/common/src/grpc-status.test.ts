import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import { boundedStatusMessage, StatusError, statusForFailure } from './grpc-status.js';

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

describe('statusForFailure', () => {
  class KnownError extends Error {}
  const classify = (err: unknown): status | undefined => (err instanceof KnownError ? status.NOT_FOUND : undefined);
  const cancelled = (message: string): string => `cancelled (${message})`;

  it('keeps a StatusError, gives a known error its code, a cancelled call Cancelled, anything else Internal', () => {
    const given = new StatusError(status.ALREADY_EXISTS, 'exists');
    assert.equal(statusForFailure(given, undefined, classify, cancelled), given);
    const known = statusForFailure(new KnownError('gone'), AbortSignal.abort(), classify, cancelled);
    assert.deepEqual([known.code, known.message], [status.NOT_FOUND, 'gone']);
    const aborted = statusForFailure(new Error('boom'), AbortSignal.abort(), classify, cancelled);
    assert.deepEqual([aborted.code, aborted.message], [status.CANCELLED, 'cancelled (boom)']);
    const other = statusForFailure('text', new AbortController().signal, classify, cancelled);
    assert.deepEqual([other.code, other.message], [status.INTERNAL, 'text']);
  });
});
