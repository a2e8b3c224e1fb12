import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, defaultConfig, parseIdRange, ConfigError, type SkiffConfig } from './config.js';

function write(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-config-'));
  const path = join(dir, 'skiff.toml');
  writeFileSync(path, text);
  return path;
}

/** A loaded configuration without the runsc handler added because this machine has runsc. */
function withoutDetectedRunsc(config: SkiffConfig): SkiffConfig {
  return { ...config, runtime: { ...config.runtime, handlers: config.runtime.handlers.filter((h) => h.name !== 'runsc') } };
}

test('an empty file gives the defaults', async () => {
  assert.deepEqual(withoutDetectedRunsc(await loadConfig(write(''))), defaultConfig());
});

test('runsc is offered as the sandbox-kind handler "runsc" when runtime.runsc is executable, unless defined or turned off', async () => {
  const detected = await loadConfig(write('[runtime]\nrunsc = "/bin/true"\n'));
  assert.deepEqual(detected.runtime.handlers, [{ name: 'runsc', runtime_path: '/bin/true', runtime_args: ['--platform=systrap', '--network=host', '--overlay2=none', '--oci-seccomp'], runtime_root: '', kind: 'sandbox' }]);
  assert.deepEqual((await loadConfig(write('[runtime]\nrunsc = ""\n'))).runtime.handlers, []);
  assert.deepEqual((await loadConfig(write('[runtime]\nrunsc = "/nonexistent/runsc"\n'))).runtime.handlers, []);
  const own = await loadConfig(write('[runtime]\nrunsc = "/bin/true"\n[[runtime.handlers]]\nname = "runsc"\nruntime_path = "/bin/true"\nkind = "sandbox"\nruntime_args = ["--platform=kvm"]\n'));
  assert.deepEqual(own.runtime.handlers.map((h) => h.runtime_args), [['--platform=kvm']]);
  assert.equal((await loadConfig(write('[runtime]\nrunsc = "/bin/true"\ndefault_handler = "runsc"\n'))).runtime.default_handler, 'runsc');
  assert.equal((await loadConfig(write('[runtime]\ndefault_handler = "runc"\n'))).runtime.default_handler, 'runc');
  await assert.rejects(loadConfig(write('[runtime]\nrunsc = ""\ndefault_handler = "runsc"\n')), /"runtime.default_handler" names "runsc", which is not a handler of this node \(runc\)/);
  await assert.rejects(loadConfig(write('[[runtime.handlers]]\nname = "x"\nruntime_path = "/x"\nkind = "vm"\n')), /"runtime.handlers\[0\].kind" must be "oci" or "sandbox"/);
  await assert.rejects(loadConfig(write('[[runtime.handlers]]\nname = "x"\nruntime_path = "/x"\nruntime_args = ["kvm"]\n')), /runtime_args" must be a list of flags/);
});

test('values overlay the defaults and sockets follow run_dir', async () => {
  const c = await loadConfig(write('run_dir = "/tmp/x"\n[image]\nmax_concurrent_downloads = 5\n'));
  assert.equal(c.image.socket, '/tmp/x/image.sock');
  assert.equal(c.runtime.socket, '/tmp/x/runtime.sock');
  assert.equal(c.image.max_concurrent_downloads, 5);
  assert.equal(c.root, '/var/lib/skiff');
});

test('unknown keys, wrong types and bad values are named', async () => {
  await assert.rejects(loadConfig(write('rooot = "/x"')), (e: Error) => e instanceof ConfigError && /rooot/.test(e.message));
  await assert.rejects(loadConfig(write('[image]\nmax_concurrent_downloads = "3"')), /image.max_concurrent_downloads/);
  await assert.rejects(loadConfig(write('root = "relative"')), /absolute/);
  await assert.rejects(loadConfig(write('log_level = "loud"')), /log_level/);
  await assert.rejects(loadConfig('/nonexistent/skiff.toml'), /cannot read/);
});

test('the shipped config/skiff.toml documents exactly the defaults', async () => {
  const shipped = new URL('../../../config/skiff.toml', import.meta.url).pathname;
  assert.deepEqual(withoutDetectedRunsc(await loadConfig(shipped)), defaultConfig());
});

test('logs-svc: its socket follows run_dir, its state follows root, a bad flush_timeout is named', async () => {
  const c = await loadConfig(write('run_dir = "/tmp/x"\nroot = "/tmp/r"\n'));
  assert.equal(c.logs.internal_socket, '/tmp/x/logs-internal.sock');
  assert.equal(c.logs.state_dir, '/tmp/r/logs');
  const own = await loadConfig(write('root = "/tmp/r"\n[logs]\nstate_dir = "/srv/logs"\n'));
  assert.equal(own.logs.state_dir, '/srv/logs');
  await assert.rejects(loadConfig(write('[logs]\nflush_timeout = "soon"')), /logs.flush_timeout/);
  await assert.rejects(loadConfig(write('[logs]\nstate_dir = "rel"')), /logs.state_dir/);
});

test('image extraction limits: set in [image], and a non-integer or too small a value is named', async () => {
  const c = await loadConfig(write('[image]\nmax_layer_bytes = 8_388_608\nmax_layer_entries = 100\nmax_pax_header_bytes = 4096\nmin_free_bytes = 0\n'));
  assert.deepEqual([c.image.max_layer_bytes, c.image.max_layer_entries, c.image.max_pax_header_bytes, c.image.min_free_bytes], [8_388_608, 100, 4096, 0]);
  await assert.rejects(loadConfig(write('[image]\nmax_layer_entries = 0')), /"image\.max_layer_entries" must be an integer of at least 1, got 0/);
  await assert.rejects(loadConfig(write('[image]\nmax_layer_bytes = 1.5')), /"image\.max_layer_bytes" must be an integer/);
  await assert.rejects(loadConfig(write('[image]\nmin_free_bytes = -1')), /"image\.min_free_bytes" must be an integer of at least 0/);
});

test('stream-svc limits: read from [stream], a non-positive or fractional one is named', async () => {
  const c = await loadConfig(write('[stream]\nmax_connections = 10\nmax_streams_per_session = 20\nmax_port_forward_connections = 3\n'));
  assert.deepEqual([c.stream.max_connections, c.stream.max_streams_per_session, c.stream.max_port_forward_connections], [10, 20, 3]);
  await assert.rejects(loadConfig(write('[stream]\nmax_connections = 0')), /stream.max_connections/);
  await assert.rejects(loadConfig(write('[stream]\nmax_streams_per_session = 1.5')), /stream.max_streams_per_session/);
  await assert.rejects(loadConfig(write('[stream]\nmax_port_forward_connections = -1')), /stream.max_port_forward_connections/);
});

test('runtime.pause_every_pod: off by default, a boolean', async () => {
  assert.equal((await loadConfig(write(''))).runtime.pause_every_pod, false);
  assert.equal((await loadConfig(write('[runtime]\npause_every_pod = true\n'))).runtime.pause_every_pod, true);
  await assert.rejects(loadConfig(write('[runtime]\npause_every_pod = "yes"\n')), /runtime\.pause_every_pod/);
});

test('runtime.userns_id_range: unset by default, FIRST:COUNT from 65536 up, anything else named', async () => {
  assert.equal((await loadConfig(write(''))).runtime.userns_id_range, '');
  assert.equal(parseIdRange(''), undefined);
  const c = await loadConfig(write('[runtime]\nuserns_id_range = "1073741824:65536000"\n'));
  assert.deepEqual(parseIdRange(c.runtime.userns_id_range), { first: 1073741824, count: 65536000 });
  for (const bad of ['0:65536', '65535:65536', '100000', '100000:0', '4294901760:65537', '100000-165536', ' 100000:65536']) {
    await assert.rejects(loadConfig(write(`[runtime]\nuserns_id_range = "${bad}"\n`)), /"runtime\.userns_id_range" must be "FIRST:COUNT" with FIRST at least 65536/, bad);
  }
});
