import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { matchesLabels } from './label-selector.js';

describe('label selectors', () => {
  it('needs every selector entry to match exactly', () => {
    const labels = { app: 'web', tier: 'front' };
    assert.equal(matchesLabels(labels, {}), true);
    assert.equal(matchesLabels(labels, null), true);
    assert.equal(matchesLabels(labels, { app: 'web' }), true);
    assert.equal(matchesLabels(labels, { app: 'web', tier: 'front' }), true);
    assert.equal(matchesLabels(labels, { app: 'web', tier: 'back' }), false);
    assert.equal(matchesLabels(labels, { missing: '' }), false);
  });
});
