import { test } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCommand } from '@skiff/common';
import { mountsUnder, unmountAllUnder } from './host-cleanup.js';
import { isRoot } from './test-env.js';
import { workspacePath } from './workspace.js';

test('mounts below a directory are found (names with spaces too) and all unmounted, deepest first', { skip: !isRoot && 'mounting needs root' }, async () => {
  const dir = await fs.mkdtemp(join(tmpdir(), 'skiff-mounts-'));
  const outer = join(dir, 'a b');
  const inner = join(outer, 'c');
  try {
    await fs.mkdir(outer);
    assert.equal((await runCommand('mount', ['-t', 'tmpfs', 'tmpfs', outer])).code, 0);
    await fs.mkdir(inner);
    assert.equal((await runCommand('mount', ['-t', 'tmpfs', 'tmpfs', inner])).code, 0);
    assert.deepEqual(await mountsUnder(dir), [inner, outer]);
    await unmountAllUnder(dir);
    assert.deepEqual(await mountsUnder(dir), []);
  } finally {
    await unmountAllUnder(dir);
    await fs.rm(dir, { recursive: true, force: true });
  }
});

test('workspace paths lead to the packages of this repository', async () => {
  const manifest = JSON.parse(await fs.readFile(workspacePath('packages/runtime-svc/package.json'), 'utf8')) as { name: string };
  assert.equal(manifest.name, '@skiff/runtime-svc');
});
