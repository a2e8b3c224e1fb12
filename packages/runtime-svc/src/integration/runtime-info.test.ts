import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { podConfig, rejectsWith, TestDaemon, isRoot } from '@skiff/test-support';
import { RUNTIME_MAIN } from './runtime-main.js';
import { status } from '@grpc/grpc-js';
import { callUnary } from '@skiff/proto';
import { metricsAddressFile } from '@skiff/common/metrics';
import { packageVersion } from '../daemon/open-runtime.js';
import type { HandlerRuntimeVersion } from '../daemon/runtime-versions.js';
import { DEFAULT_RUNC_PATH } from '../oci/runc.js';
import { readRuntimeVersion } from '../oci/runtime-version.js';

/** Debian 12's own runc (1.1.5), which has known container escapes. */
const DEBIAN_RUNC = '/usr/sbin/runc';

describe('runtime service: version, status and runtime configuration', { skip: !isRoot && 'needs root' }, () => {
  let d: TestDaemon;

  before(async () => {
    d = await TestDaemon.create({ entry: RUNTIME_MAIN, runtimeToml: `runsc = ""\n[[runtime.handlers]]\nname = "alt"\nruntime_path = "${DEBIAN_RUNC}"\n` });
    await d.start();
  });

  after(async () => {
    await d?.cleanup();
  });

  it("reports its name and versions, the default runc's as build metadata", async () => {
    const runc = await readRuntimeVersion(DEFAULT_RUNC_PATH);
    assert.ok(!('error' in runc), JSON.stringify(runc));
    assert.deepEqual(await callUnary(d.client, 'Version', { version: '0.1.0' }), {
      version: '0.1.0',
      runtime_name: 'skiff',
      runtime_version: `${packageVersion()}+runc.${runc.version}`,
      runtime_api_version: 'v1',
    });
  });

  it('reports the runc of every handler, and warns of and counts one with known container escapes', async () => {
    const debian = await readRuntimeVersion(DEBIAN_RUNC);
    assert.ok(!('error' in debian), JSON.stringify(debian));
    const runtimes = JSON.parse((await callUnary(d.client, 'Status', { verbose: true })).info['runtimes'] ?? '[]') as HandlerRuntimeVersion[];
    const byHandler = new Map(runtimes.map((r) => [r.handler, r]));
    assert.deepEqual([...byHandler.keys()].sort(), ['', 'alt']);
    assert.equal(byHandler.get('')?.path, DEFAULT_RUNC_PATH);
    assert.equal(byHandler.get('')?.outdated, false);
    assert.deepEqual(byHandler.get('alt'), { handler: 'alt', kind: 'oci', path: DEBIAN_RUNC, ...debian, outdated: true });

    const warnings = d.logEntries().filter((e) => typeof e['msg'] === 'string' && e['msg'].startsWith('SECURITY:'));
    assert.equal(warnings.length, 1, 'one warning, for the outdated runc alone');
    const expected = `handler "alt" runs runc ${debian.version} (${DEBIAN_RUNC}), which has known container escapes`;
    assert.ok(String(warnings[0]!['msg']).includes(expected), `${String(warnings[0]!['msg'])} says: ${expected}`);

    const address = (await fs.readFile(metricsAddressFile(d.runDir, 'runtime-svc'), 'utf8')).trim();
    const page = await (await fetch(`http://${address}/metrics`)).text();
    const outdated = page.split('\n').filter((line) => line.startsWith('skiff_runtime_outdated{'));
    assert.deepEqual(outdated.sort(), [
      `skiff_runtime_outdated{handler="",path="${DEFAULT_RUNC_PATH}",version="${byHandler.get('')?.version}",service="runtime-svc"} 0`,
      `skiff_runtime_outdated{handler="alt",path="${DEBIAN_RUNC}",version="${debian.version}",service="runtime-svc"} 1`,
    ]);
  });

  it('is not network-ready without a CNI configuration, and refuses pods that need the network', async () => {
    const response = await callUnary(d.client, 'Status', {});
    const conditions = response.status?.conditions ?? [];
    assert.deepEqual(conditions.find((c) => c.type === 'RuntimeReady')?.status, true);
    const network = conditions.find((c) => c.type === 'NetworkReady');
    assert.equal(network?.status, false);
    assert.equal(network?.reason, 'NetworkPluginNotReady');
    assert.match(network?.message ?? '', new RegExp(d.cniConfDir));
    assert.deepEqual(response.runtime_handlers.map((h) => h.name), ['', 'runc', 'alt']);
    assert.deepEqual(response.info, {});

    await rejectsWith(callUnary(d.client, 'RunPodSandbox', { config: podConfig(join(d.base, 'logs')) }), status.FAILED_PRECONDITION, /no CNI network configuration/);
    assert.deepEqual(await fs.readdir(join(d.root, 'runtime', 'sandboxes')), [], 'nothing was made');
  });

  it('becomes network-ready once a configuration appears, and explains itself when verbose', async () => {
    await d.installNetwork({ ipRanges: true });
    const response = await callUnary(d.client, 'Status', { verbose: true });
    assert.equal(response.status?.conditions.find((c) => c.type === 'NetworkReady')?.status, true);
    const info = JSON.parse(response.info['config'] ?? '{}') as { cniConfigFile: string; cgroupDriver: string };
    assert.equal(info.cniConfigFile, join(d.cniConfDir, '10-test.conflist'));
    assert.equal(info.cgroupDriver, 'cgroupfs');
  });

  it('reports the cgroupfs driver on a host without systemd as PID 1', async () => {
    assert.deepEqual(await callUnary(d.client, 'RuntimeConfig', {}), { linux: { cgroup_driver: 'CGROUPFS' } });
  });

  it('keeps the pod CIDR, hands it to plugins taking ipRanges, and refuses a malformed one', async () => {
    const podCidr = await d.freeSubnet([d.subnet]);
    await callUnary(d.client, 'UpdateRuntimeConfig', { runtime_config: { network_config: { pod_cidr: podCidr } } });
    const info = JSON.parse((await callUnary(d.client, 'Status', { verbose: true })).info['config'] ?? '{}') as { podCidrs: string[] };
    assert.deepEqual(info.podCidrs, [podCidr]);
    const { pod_sandbox_id: id } = await callUnary(d.client, 'RunPodSandbox', { config: podConfig(join(d.base, 'logs')) });
    const ip = (await callUnary(d.client, 'PodSandboxStatus', { pod_sandbox_id: id })).status?.network?.ip ?? '';
    await callUnary(d.client, 'RemovePodSandbox', { pod_sandbox_id: id });
    assert.equal(ip.split('.').slice(0, 3).join('.'), podCidr.split('.').slice(0, 3).join('.'), `${ip} is from the pod CIDR ${podCidr}`);
    await rejectsWith(
      callUnary(d.client, 'UpdateRuntimeConfig', { runtime_config: { network_config: { pod_cidr: '10.244.3.0' } } }),
      status.INVALID_ARGUMENT,
      /pod_cidr/,
    );
    assert.deepEqual(JSON.parse(await fs.readFile(join(d.root, 'runtime', 'network.json'), 'utf8')), { podCidrs: [podCidr] });
  });

  it('answers calls it does not implement with Unimplemented', async () => {
    await rejectsWith(callUnary(d.client, 'CheckpointContainer', { container_id: 'x' }), status.UNIMPLEMENTED, /CheckpointContainer/);
  });
});
