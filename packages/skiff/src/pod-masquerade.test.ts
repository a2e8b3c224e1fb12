import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bridgeNetworkConfig, DEFAULT_BRIDGE_CONFLIST } from '@skiff/common/core';
import { defaultNetworkMasqueradeSubnet, masqueradeChainRules, masqueradeJumpRule } from './pod-masquerade.js';

test("Skiff's default network is masqueraded by one rule for its subnet, not per pod", () => {
  assert.equal(defaultNetworkMasqueradeSubnet(DEFAULT_BRIDGE_CONFLIST), '10.88.0.0/16');
  assert.equal(defaultNetworkMasqueradeSubnet(JSON.stringify(bridgeNetworkConfig({ subnet: '10.90.0.0/16' }))), '10.90.0.0/16');
  assert.equal(masqueradeJumpRule('10.88.0.0/16'), '-A POSTROUTING -s 10.88.0.0/16 -j SKIFF-POD-MASQ');
  assert.deepEqual(masqueradeChainRules('10.88.0.0/16'), [
    '-N SKIFF-POD-MASQ',
    '-A SKIFF-POD-MASQ -d 10.88.0.0/16 -j RETURN',
    '-A SKIFF-POD-MASQ -d 224.0.0.0/4 -j RETURN',
    '-A SKIFF-POD-MASQ -j MASQUERADE',
  ]);
});

test('a network file that masquerades per pod, or is no bridge network, gets no rule', () => {
  const perPod = bridgeNetworkConfig();
  perPod.plugins[0]!['ipMasq'] = true;
  assert.equal(defaultNetworkMasqueradeSubnet(JSON.stringify(perPod)), undefined);
  assert.equal(defaultNetworkMasqueradeSubnet(JSON.stringify({ cniVersion: '1.0.0', name: 'x', plugins: [{ type: 'ptp' }] })), undefined);
  assert.equal(defaultNetworkMasqueradeSubnet('not json'), undefined);
  const odd = bridgeNetworkConfig();
  (odd.plugins[0]!['ipam'] as { ranges: { subnet: string }[][] }).ranges[0]![0]!.subnet = '10.88.0.0/16 -j ACCEPT';
  assert.equal(defaultNetworkMasqueradeSubnet(JSON.stringify(odd)), undefined, 'a subnet that is not a plain CIDR');
});
