/**
 * Assertions on gRPC failures.
 *
 *   rejectsWithCode(promise, code, messagePattern?): Promise<ServiceError>
 */
import assert from 'node:assert/strict';
import { status, type ServiceError } from '@grpc/grpc-js';

export async function rejectsWithCode(promise: Promise<unknown>, code: status, message?: RegExp): Promise<ServiceError> {
  try {
    await promise;
  } catch (err) {
    const e = err as ServiceError;
    assert.equal(e.code, code, `expected ${status[code]}, got ${status[e.code] ?? e.code}: ${e.details ?? e.message}`);
    if (message) assert.match(e.details, message);
    return e;
  }
  assert.fail(`expected the call to fail with ${status[code]}, but it succeeded`);
}
