import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_BRIDGE_CONFLIST, DEFAULT_SUBNET, bridgeNetworkConfig, chooseSubnet, cidrsOverlap, hostRoutes } from '@skiff/common';
import { CniConfigError, loadDefaultNetwork, parseNetworkConfig } from './config.js';
import { CniRunner } from './cni.js';
import { parseCniResult, podIpsFromResult } from './result.js';

describe('CNI configuration', () => {
  it('lifts a single-plugin .conf into a list and validates', () => {
    const net = parseNetworkConfig({ cniVersion: '0.4.0', name: 'n', type: 'bridge', bridge: 'b0' }, 'x.conf');
    assert.deepEqual(net, { cniVersion: '0.4.0', name: 'n', plugins: [{ type: 'bridge', bridge: 'b0' }] });
    assert.throws(() => parseNetworkConfig({ name: 'n', plugins: [{ type: 'x' }] }, 'f'), /cniVersion/);
    assert.throws(() => parseNetworkConfig({ cniVersion: '1.0.0', name: 'n', plugins: [] }, 'f'), /empty/);
    assert.throws(() => parseNetworkConfig({ cniVersion: '1.0.0', name: 'n', plugins: [{ type: '../x' }] }, 'f'), CniConfigError);
  });

  it('loads the first configuration file by name', async () => {
    const dir = await fs.mkdtemp(join(tmpdir(), 'skiff-cni-conf-'));
    try {
      assert.equal(await loadDefaultNetwork(dir), undefined);
      assert.equal(await loadDefaultNetwork(join(dir, 'missing')), undefined);
      await fs.writeFile(join(dir, '99-late.conflist'), JSON.stringify({ cniVersion: '1.0.0', name: 'late', plugins: [{ type: 'x' }] }));
      await fs.writeFile(join(dir, '20-mid.conf'), JSON.stringify({ cniVersion: '1.0.0', name: 'mid', type: 'bridge' }));
      await fs.writeFile(join(dir, '00-ignored.txt'), 'not a config');
      const found = await loadDefaultNetwork(dir);
      assert.equal(found?.network.name, 'mid');
      assert.equal(found?.file, join(dir, '20-mid.conf'));
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it('derives request configurations as the spec says', () => {
    const net = bridgeNetworkConfig({ name: 'n' });
    const mappings = [{ hostPort: 8080, containerPort: 80, protocol: 'tcp' as const }];
    const attachment = { containerId: 'c', netns: '/ns', capabilityArgs: { portMappings: mappings } };
    const bridge = CniRunner.requestConfig(net, net.plugins[0]!, attachment, undefined);
    assert.equal(bridge['runtimeConfig'], undefined, 'bridge does not declare portMappings');
    assert.equal(bridge['prevResult'], undefined);
    assert.equal(bridge['name'], 'n');
    assert.equal(bridge['cniVersion'], '1.0.0');
    const prev = { cniVersion: '1.0.0', ips: [{ address: '10.88.0.2/16' }] };
    const portmap = CniRunner.requestConfig(net, net.plugins[1]!, attachment, prev);
    assert.deepEqual(portmap['runtimeConfig'], { portMappings: mappings });
    assert.deepEqual(portmap['prevResult'], prev);
    assert.equal(portmap['capabilities'], undefined);
  });

  it('reads pod IPs from current and legacy results', () => {
    const current = parseCniResult(
      JSON.stringify({
        cniVersion: '1.0.0',
        interfaces: [{ name: 'br' }, { name: 'veth' }, { name: 'eth0', sandbox: '/ns' }],
        ips: [
          { address: 'fd00::5/64', interface: 2 },
          { address: '10.88.0.5/16', gateway: '10.88.0.1', interface: 2 },
        ],
      }),
    );
    assert.deepEqual(podIpsFromResult(current), [
      { ip: '10.88.0.5', cidr: '10.88.0.5/16', family: 4, gateway: '10.88.0.1', interfaceName: 'eth0' },
      { ip: 'fd00::5', cidr: 'fd00::5/64', family: 6, interfaceName: 'eth0' },
    ]);
    const legacy = parseCniResult(JSON.stringify({ cniVersion: '0.2.0', ip4: { ip: '10.1.0.3/24', gateway: '10.1.0.1' } }));
    assert.deepEqual(podIpsFromResult(legacy).map((p) => p.ip), ['10.1.0.3']);
    assert.deepEqual(podIpsFromResult(parseCniResult('{"cniVersion":"1.0.0","ips":[{"address":"127.0.0.1/8"}]}')), []);
  });
});

describe('default network', () => {
  it('is a bridge + host-local + portmap list on 10.88.0.0/16', () => {
    const net = parseNetworkConfig(JSON.parse(DEFAULT_BRIDGE_CONFLIST), 'default');
    assert.deepEqual(net.plugins.map((p) => p.type), ['bridge', 'portmap']);
    assert.equal(net.plugins[0]!['bridge'], 'skiff0');
    assert.deepEqual((net.plugins[0]!['ipam'] as { ranges: unknown }).ranges, [[{ subnet: '10.88.0.0/16', gateway: '10.88.0.1' }]]);
    assert.deepEqual(net.plugins[1]!.capabilities, { portMappings: true });
  });

  it('computes overlaps and picks a subnet free of host routes', async () => {
    assert.equal(cidrsOverlap('10.88.0.0/16', '10.88.5.0/24'), true);
    assert.equal(cidrsOverlap('10.88.0.0/16', '10.89.0.0/16'), false);
    assert.equal(cidrsOverlap('10.0.0.0/8', '10.88.0.0/16'), true);
    const routes = [{ dst: 'default' }, { dst: '10.88.0.0/16', dev: 'eth1' }, { dst: '10.89.1.0/24', dev: 'eth2' }];
    assert.equal(chooseSubnet(routes), '10.90.0.0/16');
    assert.equal(chooseSubnet([{ dst: '10.88.0.0/16', dev: 'skiff0' }]), '10.88.0.0/16', 'our own bridge route is no collision');
    assert.equal(chooseSubnet([{ dst: '0.0.0.0/1' }, { dst: '128.0.0.0/1' }]), undefined);
    assert.equal(bridgeNetworkConfig({ subnet: '10.89.3.7/24' }).plugins[0]!['ipam'] !== undefined, true);
    assert.deepEqual(
      (bridgeNetworkConfig({ subnet: '10.89.3.7/24' }).plugins[0]!['ipam'] as { ranges: unknown }).ranges,
      [[{ subnet: '10.89.3.0/24', gateway: '10.89.3.1' }]],
    );
    // On this machine the default subnet is free.
    const host = await hostRoutes();
    assert.equal(chooseSubnet(host, [DEFAULT_SUBNET]), DEFAULT_SUBNET);
  });
});
