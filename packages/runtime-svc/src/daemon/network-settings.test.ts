import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parsePodCidrs } from './network-settings.js';

describe('pod CIDR', () => {
  it('accepts single and dual-stack CIDRs and refuses others', () => {
    assert.deepEqual(parsePodCidrs('10.244.1.0/24'), ['10.244.1.0/24']);
    assert.deepEqual(parsePodCidrs('10.244.1.0/24, fd00:1::/64'), ['10.244.1.0/24', 'fd00:1::/64']);
    assert.deepEqual(parsePodCidrs(''), []);
    for (const bad of ['10.0.0.0', '10.0.0.0/33', 'x/8', '10.0.0.0/8/1', 'fd00::/129']) assert.throws(() => parsePodCidrs(bad), /not a CIDR/, bad);
  });
});
