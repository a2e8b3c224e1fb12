import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { hasDnsSettings, renderHosts, renderResolvConf } from './pod-files.js';

describe('pod files', () => {
  it('renders resolv.conf from DNS settings', () => {
    const dns = { servers: ['10.96.0.10', '1.1.1.1'], searches: ['default.svc.cluster.local', 'svc.cluster.local'], options: ['ndots:5'] };
    assert.equal(renderResolvConf(dns), 'search default.svc.cluster.local svc.cluster.local\nnameserver 10.96.0.10\nnameserver 1.1.1.1\noptions ndots:5\n');
    assert.equal(hasDnsSettings({ servers: [], searches: [], options: [] }), false);
  });
  it('renders /etc/hosts with the pod addresses', () => {
    const hosts = renderHosts('web-0', [{ ip: '10.88.0.5', cidr: '10.88.0.5/16', family: 4 }]);
    assert.match(hosts, /^127\.0\.0\.1\tlocalhost$/m);
    assert.match(hosts, /^10\.88\.0\.5\tweb-0$/m);
  });
});
