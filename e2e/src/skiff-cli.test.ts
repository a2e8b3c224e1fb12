import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SKIFF_ENTRY } from './lib/skiff-instance.js';
import { makeTempDir, removeDir } from './lib/tmp.js';
import { getFreePort } from './lib/free-port.js';

const run = promisify(execFile);

async function skiff(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [SKIFF_ENTRY, ...args], { timeout: 90_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

test('skiff up --detach, status, down: the operator cycle', async () => {
  const dir = await makeTempDir('skiff-cli');
  const config = join(dir, 'skiff.toml');
  writeFileSync(
    config,
    [
      `root = "${join(dir, 'root')}"`,
      `run_dir = "${join(dir, 'run')}"`,
      `log_file = "${join(dir, 'log', 'skiff.log')}"`,
      '[image]',
      `registries_config = "${join(dir, 'registries.conf')}"`,
      '[stream]',
      `port = ${await getFreePort()}`,
      '[runtime]',
      `cni_conf_dir = "${join(dir, 'cni')}"`,
      'cgroup_parent = "/skiff-e2e"',
    ].join('\n'),
  );
  try {
    const down = await skiff('status', '--config', config);
    assert.equal(down.code, 3, 'status exits 3 while nothing answers');
    assert.match(down.stdout, /supervisor: not running/);

    const up = await skiff('up', '--detach', '--config', config);
    assert.equal(up.code, 0, up.stderr + up.stdout);
    assert.match(up.stdout, /image-svc\s+\d+\s+\S+image\.sock\s+answering/);
    assert.match(up.stdout, /runtime-svc\s+\d+\s+\S+runtime\.sock\s+answering/);
    assert.match(up.stdout, /stream-svc\s+\d+\s+http:\/\/127\.0\.0\.1:\d+\s+answering/);
    assert.match(up.stdout, /logs-svc\s+\d+\s+\S+logs-internal\.sock\s+answering/);
    assert.ok(existsSync(join(dir, 'cni', '10-skiff.conflist')), 'skiff up installs the default pod network');

    const again = await skiff('up', '--detach', '--config', config);
    assert.equal(again.code, 0);
    assert.match(again.stdout, /already running/);

    const status = await skiff('status', '--json', '--config', config);
    assert.equal(status.code, 0);
    const report = JSON.parse(status.stdout) as { supervisorPid: number; services: Array<{ name: string; answers: boolean }> };
    assert.deepEqual(report.services.map((s) => [s.name, s.answers]), [
      ['image-svc', true],
      ['runtime-svc', true],
      ['stream-svc', true],
      ['logs-svc', true],
    ]);

    const stopped = await skiff('down', '--config', config);
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.ok(!existsSync(join(dir, 'run', 'image.sock')));
    assert.ok(!existsSync(join(dir, 'run', 'runtime.sock')));
    assert.ok(!existsSync(join(dir, 'run', 'logs-internal.sock')));
    assert.equal((await skiff('status', '--config', config)).code, 3);
    assert.match(readFileSync(join(dir, 'log', 'skiff.log'), 'utf8'), /image service ready/);
  } finally {
    await skiff('down', '--config', config);
    await removeDir(dir);
  }
});

test('a bad configuration is refused with the key named', async () => {
  const dir = await makeTempDir('skiff-cli-bad');
  try {
    writeFileSync(join(dir, 'skiff.toml'), '[image]\nmax_concurent_downloads = 3\n');
    const result = await skiff('status', '--config', join(dir, 'skiff.toml'));
    assert.equal(result.code, 1);
    assert.match(result.stderr, /unknown configuration key "image\.max_concurent_downloads"/);
  } finally {
    await removeDir(dir);
  }
});
