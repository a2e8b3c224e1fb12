import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { listMetricDescriptorsCall } from './metric-descriptors-list.js';

describe('ListMetricDescriptors', () => {
  it('describes each metric once, with its help and the container labels first', () => {
    const { descriptors = [] } = listMetricDescriptorsCall();
    const names = descriptors.map((d) => d.name);
    assert.ok(names.includes('container_cpu_usage_seconds_total'), names.join(', '));
    assert.equal(new Set(names).size, names.length, 'no metric is described twice');
    for (const d of descriptors) {
      assert.ok(d.help, `${d.name} has a help text`);
      assert.deepEqual(d.label_keys?.slice(0, 3), ['container', 'id', 'image'], `${d.name}'s labels`);
    }
  });
});
