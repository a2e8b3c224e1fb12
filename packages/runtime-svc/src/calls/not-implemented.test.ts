import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { status, type ServiceError } from '@grpc/grpc-js';
import { notImplemented } from './not-implemented.js';

describe('calls this runtime does not implement', () => {
  it('are answered Unimplemented, naming the call', () => {
    for (const call of ['CheckpointContainer', 'CheckpointPod', 'RestorePod']) {
      const answers: (Partial<ServiceError> | null)[] = [];
      notImplemented(call)({}, (err) => answers.push(err));
      assert.deepEqual(answers, [{ code: status.UNIMPLEMENTED, details: `${call} is not supported by this runtime` }]);
    }
  });
});
