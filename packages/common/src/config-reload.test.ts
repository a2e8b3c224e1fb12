import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { changedKeys } from './config-reload.js';
import { defaultConfig } from './config.js';

describe('configuration reload', () => {
  it('names every changed key, nested, lists whole', () => {
    const before = defaultConfig();
    const after = defaultConfig();
    after.log_level = 'debug';
    after.image.pinned_images = ['registry.k8s.io/pause:3.10'];
    after.runtime.handlers = [{ name: 'kata', runtime_path: '/usr/bin/kata' } as never];
    assert.deepEqual(changedKeys(before, after), ['image.pinned_images', 'log_level', 'runtime.handlers']);
    assert.deepEqual(changedKeys(before, defaultConfig()), []);
  });
});
