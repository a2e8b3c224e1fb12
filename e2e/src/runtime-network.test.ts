import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { cidrsOverlap, hostRoutes } from '@skiff/common/core';
import { callUnary } from '@skiff/proto';
import { getFreePort } from './lib/free-port.js';
import { startRuntimeHarness, UNDER_GVISOR, type Pod, type RuntimeHarness } from './lib/runtime-harness.js';

let h: RuntimeHarness;

before(async () => {
  h = await startRuntimeHarness({ images: ['busybox'] });
});

after(async () => {
  await h?.stop();
});

/** busybox httpd in the foreground, serving one page that names the pod. */
function httpdCommand(port: number, page: string): string[] {
  return ['sh', '-c', `mkdir -p /www && echo ${page} > /www/index.html && exec httpd -f -p ${port} -h /www`];
}

async function removePod(pod: Pod | undefined): Promise<void> {
  if (pod) await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 60_000 });
}

/** Retries while the server in a just-started container is not listening yet. */
async function fetchText(url: string, timeoutMs = 10_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
      return await response.text();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

function interfaceNames(procNetDev: string): string[] {
  return procNetDev
    .split('\n')
    .slice(2)
    .map((line) => line.split(':')[0]!.trim())
    .filter(Boolean)
    .sort();
}

describe('pod networking through skiff up', () => {
  test('two pods on the bridge reach each other by IP', async () => {
    let server: Pod | undefined;
    let client: Pod | undefined;
    try {
      server = await h.runPod();
      client = await h.runPod();
      const serverIp = await h.podIp(server);
      const clientIp = await h.podIp(client);
      assert.notEqual(serverIp, clientIp);
      await h.runContainer(server, 'web', { command: httpdCommand(8080, 'served-by-pod-a') });
      const probe = await h.runContainer(client, 'probe');

      const ping = await h.exec(probe, ['ping', '-c', '1', '-W', '2', serverIp]);
      // runsc runs without --net-raw: gVisor refuses ICMP sockets (runtime-svc's README).
      if (UNDER_GVISOR) assert.notEqual(ping.code, 0, ping.stdout + ping.stderr);
      else assert.equal(ping.code, 0, ping.stdout + ping.stderr);
      // busybox's static wget crashes without NSS modules in the image; nc speaks HTTP well enough.
      const get = ['sh', '-c', `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 2 ${serverIp} 8080`];
      let response = '';
      for (let i = 0; i < 50 && !response.includes('200 OK'); i++) {
        response = (await h.exec(probe, get)).stdout;
        if (!response.includes('200 OK')) await new Promise((r) => setTimeout(r, 100));
      }
      assert.match(response, /^HTTP\/1\.[01] 200 OK\r\n[^]*\r\n\r\nserved-by-pod-a\n$/);
    } finally {
      await removePod(client);
      await removePod(server);
    }
    assert.deepEqual((await h.settledInventory()).ipOwners, {}, 'both addresses are released');
  });

  test('a hostPort reaches the pod from the host on 127.0.0.1, and goes with the pod', async () => {
    const hostPort = await getFreePort();
    let pod: Pod | undefined = await h.runPod({ port_mappings: [{ protocol: 'TCP', container_port: 8080, host_port: hostPort }] });
    try {
      await h.runContainer(pod, 'web', { command: httpdCommand(8080, 'through-the-host-port') });
      assert.equal(await fetchText(`http://127.0.0.1:${hostPort}/`), 'through-the-host-port\n');
      assert.deepEqual((await h.settledInventory()).natRuleOwners, [pod.id], 'the pod owns the port rules');
      await removePod(pod);
      pod = undefined;
      await assert.rejects(fetch(`http://127.0.0.1:${hostPort}/`, { signal: AbortSignal.timeout(2000) }));
      assert.deepEqual((await h.settledInventory()).natRuleOwners, [], 'the port rules are removed with the pod');
    } finally {
      await removePod(pod);
    }
  });

  test('a pod reaches an address beyond the host with the host as its source (the network is masqueraded)', async () => {
    // The world beyond the host: a namespace of this test's own behind a veth, on a /30 of the
    // benchmarking range that no route of the host touches (the host's own network may be anywhere).
    const routes = await hostRoutes();
    const subnet = [...Array(256).keys()]
      .map((i) => `198.18.${(process.pid + i) % 256}.0/30`)
      .find((candidate) => !routes.some((r) => r.dst !== 'default' && cidrsOverlap(candidate, r.dst)));
    assert.ok(subnet, 'a /30 in 198.18.0.0/16 that no host route overlaps');
    const prefix = subnet.slice(0, -'0/30'.length);
    const hostAddress = `${prefix}1`;
    const outsideAddress = `${prefix}2`;
    const ns = `skiff-e2e-out-${process.pid}`;
    const hostIf = `sko${process.pid}`.slice(0, 15);
    const ip = (...args: string[]): void => void execFileSync('ip', args, { stdio: 'pipe' });
    ip('netns', 'add', ns);
    let server: ReturnType<typeof spawn> | undefined;
    let pod: Pod | undefined;
    try {
      ip('link', 'add', hostIf, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns);
      ip('addr', 'add', `${hostAddress}/30`, 'dev', hostIf);
      ip('link', 'set', hostIf, 'up');
      ip('-n', ns, 'addr', 'add', `${outsideAddress}/30`, 'dev', 'eth0');
      ip('-n', ns, 'link', 'set', 'eth0', 'up');
      // Tells each client the source address its connection came from.
      const serve = `require('net').createServer((s) => s.end(s.remoteAddress + '\\n')).listen(8081, '${outsideAddress}', () => console.log('ready'))`;
      server = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', serve], { stdio: ['ignore', 'pipe', 'inherit'] });
      await new Promise<void>((resolve, reject) => {
        server!.stdout!.once('data', () => resolve());
        server!.once('exit', (code) => reject(new Error(`the outside server exited (${code})`)));
      });
      pod = await h.runPod();
      const probe = await h.runContainer(pod, 'probe');
      const answer = await h.exec(probe, ['nc', '-w', '3', outsideAddress, '8081']);
      assert.equal(answer.stdout.trim(), hostAddress, `the connection came from ${answer.stdout.trim() || 'nowhere'} (pod ${await h.podIp(pod)}): ${answer.stderr}`);
    } finally {
      server?.kill();
      await removePod(pod);
      ip('netns', 'del', ns);
    }
  });

  test('a hostNetwork pod sees the host interfaces and host name, and gets no address of its own', async () => {
    const pod = await h.runPod({ hostname: '', linux: { security_context: { namespace_options: { network: 'NODE' } } } });
    try {
      assert.equal((await h.podStatus(pod.id)).network?.ip ?? '', '');
      const id = await h.runContainer(pod, 'host-net');
      const inside = await h.exec(id, ['cat', '/proc/net/dev']);
      assert.deepEqual(interfaceNames(inside.stdout), interfaceNames(readFileSync('/proc/net/dev', 'utf8')));
      assert.equal((await h.exec(id, ['hostname'])).stdout, `${hostname()}\n`);
      const inventory = await h.settledInventory();
      assert.deepEqual([inventory.netns, inventory.ipOwners], [[], {}]);
    } finally {
      await removePod(pod);
    }
  });
});
