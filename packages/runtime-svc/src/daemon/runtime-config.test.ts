import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig, loadConfig } from '@skiff/common';
import { RuntimePaths } from './paths.js';
import { RuntimeHandlers } from './runtime-handlers.js';

async function withConfig<T>(text: string, fn: (path: string) => Promise<T>): Promise<T> {
  const dir = await fs.mkdtemp(join(tmpdir(), 'skiff-runtime-config-'));
  try {
    await fs.writeFile(join(dir, 'skiff.toml'), text);
    return await fn(join(dir, 'skiff.toml'));
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

describe('runtime configuration', () => {
  it('reads runtime handlers and resolves them, with the default under "" and "runc"', async () => {
    const config = await withConfig('run_dir = "/run/x"\n[runtime]\nrunsc = ""\n[[runtime.handlers]]\nname = "crun"\nruntime_path = "/usr/bin/crun"\n', loadConfig);
    assert.deepEqual(config.runtime.handlers, [{ name: 'crun', runtime_path: '/usr/bin/crun', runtime_args: [], runtime_root: '', kind: 'oci' }]);
    const handlers = new RuntimeHandlers(config.runtime, new RuntimePaths(config.root, config.run_dir), false);
    assert.deepEqual(handlers.names(), ['', 'runc', 'crun']);
    assert.equal(handlers.resolve('').runc.root, '/run/x/runc');
    assert.equal(handlers.resolve('runc'), handlers.default);
    assert.equal(handlers.resolve('crun').runc.binary, '/usr/bin/crun');
    assert.equal(handlers.resolve('crun').runc.root, '/run/x/runtimes/crun');
    assert.equal(handlers.resolve('crun').kind, 'oci');
    assert.throws(() => handlers.resolve('kata'), (e: Error & { code?: number }) => e.code === 3 && /"kata" is not configured; this node offers: runc, crun/.test(e.message));
    assert.equal(handlers.forExisting('gone').runc.root, '/run/x/runtimes/gone', 'a handler dropped from the configuration can still clean up');
  });

  it('refuses malformed handlers, naming the key', async () => {
    const bad = [
      ['name = "Bad_Name"\nruntime_path = "/x"', /name" must be a DNS label/],
      ['name = "runc"\nruntime_path = "/x"', /"runc" is the default handler/],
      ['name = "a"\nruntime_path = "relative"', /runtime_path" must be an absolute path/],
      ['name = "a"\nruntime_path = "/x"\nextra = 1', /unknown configuration key "runtime.handlers\[0\].extra"/],
    ] as const;
    for (const [table, message] of bad) {
      await withConfig(`[[runtime.handlers]]\n${table}\n`, (path) => assert.rejects(loadConfig(path), message));
    }
    await withConfig('[[runtime.handlers]]\nname = "a"\nruntime_path = "/x"\n[[runtime.handlers]]\nname = "a"\nruntime_path = "/y"\n', (path) =>
      assert.rejects(loadConfig(path), /defined twice/),
    );
    await withConfig('[runtime]\ncni_bin_dirs = ["relative"]\n', (path) => assert.rejects(loadConfig(path), /cni_bin_dirs/));
  });

  it('has defaults for every runtime key', () => {
    const runtime = defaultConfig().runtime;
    assert.equal(runtime.catatonit, '/usr/bin/catatonit');
    assert.equal(runtime.cni_conf_dir, '/etc/cni/net.d');
    assert.equal(runtime.cgroup_parent, '/skiff');
    assert.deepEqual(runtime.handlers, []);
  });
});
