import { test } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MissingHostToolsError, missingHostTools, requireHostTools, resolveHostTool } from './host-tools.js';

async function scratch(): Promise<string> {
  return fs.mkdtemp(join(tmpdir(), 'skiff-host-tools-'));
}

test('an absolute path resolves only to an executable regular file', async () => {
  const dir = await scratch();
  try {
    const tool = join(dir, 'tool');
    await fs.writeFile(tool, '#!/bin/sh\n', { mode: 0o755 });
    const plain = join(dir, 'plain');
    await fs.writeFile(plain, 'data', { mode: 0o644 });
    assert.equal(await resolveHostTool({ name: 'tool', path: tool, debianPackage: 'x' }), tool);
    assert.equal(await resolveHostTool({ name: 'plain', path: plain, debianPackage: 'x' }), undefined);
    assert.equal(await resolveHostTool({ name: 'dir', path: dir, debianPackage: 'x' }), undefined);
    assert.equal(await resolveHostTool({ name: 'gone', path: join(dir, 'gone'), debianPackage: 'x' }), undefined);
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
});

test('a bare name is looked up on the search path, first match wins', async () => {
  const first = await scratch();
  const second = await scratch();
  try {
    await fs.writeFile(join(second, 'zstd'), '#!/bin/sh\n', { mode: 0o755 });
    const searchPath = `${first}:${second}`;
    assert.equal(await resolveHostTool({ name: 'zstd', path: 'zstd', debianPackage: 'zstd' }, searchPath), join(second, 'zstd'));
    await fs.writeFile(join(first, 'zstd'), '#!/bin/sh\n', { mode: 0o755 });
    assert.equal(await resolveHostTool({ name: 'zstd', path: 'zstd', debianPackage: 'zstd' }, searchPath), join(first, 'zstd'));
    assert.equal(await resolveHostTool({ name: 'zstd', path: 'zstd', debianPackage: 'zstd' }, ''), undefined);
  } finally {
    await fs.rm(first, { recursive: true, force: true });
    await fs.rm(second, { recursive: true, force: true });
  }
});

test('a missing tool is named with where it was expected and its Debian package', async () => {
  const dir = await scratch();
  try {
    const present = join(dir, 'present');
    await fs.writeFile(present, '#!/bin/sh\n', { mode: 0o755 });
    const tools = [
      { name: 'present', path: present, debianPackage: 'p' },
      { name: 'nsenter', path: join(dir, 'nsenter'), debianPackage: 'util-linux' },
      { name: 'zstd', path: 'zstd', debianPackage: 'zstd' },
    ];
    const missing = await missingHostTools(tools, dir);
    assert.deepEqual(missing.map((m) => m.tool.name), ['nsenter', 'zstd']);
    assert.equal(missing[0]!.message, `nsenter is missing: no executable file at ${join(dir, 'nsenter')}; install the Debian package util-linux`);
    assert.equal(missing[1]!.message, `zstd is missing: no executable "zstd" on PATH (${dir}); install the Debian package zstd`);

    await assert.rejects(requireHostTools(tools, dir), (err: unknown) => {
      assert.ok(err instanceof MissingHostToolsError);
      assert.equal(err.message, missing.map((m) => m.message).join('\n'));
      return true;
    });
    await requireHostTools(tools.slice(0, 1), dir);
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
});
