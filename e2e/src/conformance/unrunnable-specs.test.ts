import assert from 'node:assert/strict';
import { test } from 'node:test';
import { skipPattern, unrunnableReason, UNRUNNABLE_SPECS } from './unrunnable-specs.js';

test('a spec is known by a part of its text, runs of spaces counting as one', () => {
  const name = '[sig-node] Swap [LinuxOnly] [Feature:NodeSwap]  with a critical pod - should avoid swap';
  assert.match(unrunnableReason(name) ?? '', /cgroup v2/);
  assert.equal(unrunnableReason('[sig-node] Swap [LinuxOnly] [Feature:NodeSwap] with configuration QOS Guaranteed'), undefined);
});

test("the skip pattern matches the spec's text as Ginkgo joins it (brackets literal), and only the whole text", () => {
  for (const spec of UNRUNNABLE_SPECS) {
    const pattern = new RegExp(skipPattern(spec));
    assert.match(`prefix ${spec.text.replace(/ /g, '  ')} suffix`, pattern);
    // The whole text is needed: the same text with another last letter is not matched.
    assert.doesNotMatch(`${spec.text.slice(0, -1)}#`, pattern);
  }
});
