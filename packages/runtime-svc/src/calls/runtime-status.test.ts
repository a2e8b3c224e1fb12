import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_BRIDGE_CONFLIST } from '@skiff/common';
import type { cri } from '@skiff/proto';
import { criRequest, inUnitContext } from '../daemon/unit-context.js';
import { runtimeStatusCall } from './runtime-status.js';

const statusRequest = (verbose: boolean): cri.StatusRequest__Output => criRequest('Status', { verbose });

describe('Status', () => {
  it('the runtime is ready; the network is not while the CNI directory holds no configuration, and says where it looked', async () => {
    await inUnitContext(async (u) => {
      const { status } = await runtimeStatusCall(u.ctx, statusRequest(false));
      assert.deepEqual(status?.conditions?.[0], { type: 'RuntimeReady', status: true, reason: '', message: '' });
      assert.deepEqual(status?.conditions?.[1], {
        type: 'NetworkReady',
        status: false,
        reason: 'NetworkPluginNotReady',
        message: `Network plugin returns error: no CNI network configuration found in ${u.ctx.config.runtime.cni_conf_dir}`,
      });
    });
  });

  it('the network is ready once a configuration is there, and verbose info names its file', async () => {
    await inUnitContext(async (u) => {
      const file = join(u.ctx.config.runtime.cni_conf_dir, '10-skiff.conflist');
      await fs.writeFile(file, DEFAULT_BRIDGE_CONFLIST);
      const response = await runtimeStatusCall(u.ctx, statusRequest(true));
      assert.deepEqual(response.status?.conditions?.[1], { type: 'NetworkReady', status: true, reason: '', message: '' });
      const config = JSON.parse(response.info?.['config'] ?? '{}') as { cniConfigFile?: string; journald?: boolean; cgroupDriver?: string };
      assert.deepEqual([config.cniConfigFile, config.journald, config.cgroupDriver], [file, true, 'cgroupfs']);
      assert.deepEqual(JSON.parse(response.info?.['runtimes'] ?? ''), []);
    });
  });

  it('a configuration that does not load keeps the network not ready, with the reason, rather than failing the call', async () => {
    await inUnitContext(async (u) => {
      await fs.writeFile(join(u.ctx.config.runtime.cni_conf_dir, '10-broken.conflist'), '{ not json');
      const { status } = await runtimeStatusCall(u.ctx, statusRequest(false));
      const network = status?.conditions?.[1];
      assert.deepEqual([network?.type, network?.status, network?.reason], ['NetworkReady', false, 'NetworkPluginNotReady']);
      assert.match(network?.message ?? '', /^Network plugin returns error: .*10-broken\.conflist/);
    });
  });

  it('lists every handler with the features it has, and no verbose info unless asked', async () => {
    await inUnitContext({ runtime: { handlers: [{ name: 'gvisor', runtime_path: '/usr/bin/runsc', runtime_args: [], runtime_root: '', kind: 'sandbox' }] } }, async (u) => {
      const response = await runtimeStatusCall(u.ctx, statusRequest(false));
      assert.deepEqual(
        response.runtime_handlers?.map((h) => [h.name, h.features?.user_namespaces, h.features?.recursive_read_only_mounts]),
        [
          ['', true, true],
          ['runc', true, true],
          ['gvisor', false, false],
        ],
      );
      assert.deepEqual(response.features, { supplemental_groups_policy: true, user_namespaces_host_network: false, mount_options: true });
      assert.equal(response.info, undefined);
    });
  });

  it('the default handler "" offers what runtime.default_handler does', async () => {
    const gvisor = { name: 'gvisor', runtime_path: '/usr/bin/runsc', runtime_args: [], runtime_root: '', kind: 'sandbox' as const };
    await inUnitContext({ runtime: { handlers: [gvisor], default_handler: 'gvisor' } }, async (u) => {
      const response = await runtimeStatusCall(u.ctx, statusRequest(false));
      const unnamed = response.runtime_handlers?.find((h) => h.name === '');
      assert.deepEqual([unnamed?.features?.user_namespaces, unnamed?.features?.recursive_read_only_mounts], [false, false]);
    });
  });
});
