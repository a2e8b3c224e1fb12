import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isNetworkSysctl, sysctlFile } from './pod-sysctls.js';

describe("the sysctls Skiff writes itself (runsc pods, pods without a pause)", () => {
  it('net.* ones are the network namespace\'s, in either spelling', () => {
    assert.equal(isNetworkSysctl('net.ipv4.ip_local_port_range'), true);
    assert.equal(isNetworkSysctl('net/ipv4/conf/eth0.100/forwarding'), true);
    assert.equal(isNetworkSysctl('kernel.shm_rmid_forced'), false);
    assert.equal(isNetworkSysctl('network.x'), false);
  });

  it('name their /proc/sys file, and never one outside it', () => {
    assert.equal(sysctlFile('net.ipv4.ip_local_port_range'), '/proc/sys/net/ipv4/ip_local_port_range');
    assert.equal(sysctlFile('net/ipv4/conf/eth0.100/forwarding'), '/proc/sys/net/ipv4/conf/eth0.100/forwarding');
    for (const bad of ['net/../../etc/x', 'net..ipv4', 'net/ipv4/', 'net/./x']) assert.throws(() => sysctlFile(bad), /malformed/);
  });
});
