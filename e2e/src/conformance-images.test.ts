import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { callUnary } from '@skiff/proto';
import { CONFORMANCE_IMAGES, conformanceRegistriesConf, pushConformanceImages, type ConformanceImageName } from './lib/conformance-images.js';
import { getFreePort } from './lib/free-port.js';
import { kubeToolsBin } from './lib/kube-tools.js';
import { startRuntimeHarness, type Pod, type RuntimeHarness } from './lib/runtime-harness.js';
import { until } from './lib/skiff-instance.js';

// The node conformance suite's images under the names the suite uses, pulled through a mirror of
// their registries and run: each must do what the suite's specs expect of it.
let h: RuntimeHarness;
let pod: Pod;
let counter = 0;

const reference = (name: ConformanceImageName): string => CONFORMANCE_IMAGES.find((spec) => spec.name === name)!.reference;

before(async () => {
  const agnhost = join(await kubeToolsBin(), 'agnhost');
  h = await startRuntimeHarness({ images: [], registriesConf: conformanceRegistriesConf });
  await pushConformanceImages(h.registry, { agnhost });
  pod = await h.runPod();
});

after(async () => {
  await h?.stop();
});

/** A container of `name`'s image with its own command (or the image's), started. */
async function start(name: ConformanceImageName, overrides: Parameters<RuntimeHarness['runContainer']>[2] = {}): Promise<string> {
  return h.runContainer(pod, `${name}-${++counter}`, { image: { image: reference(name) }, command: [], ...overrides });
}

describe('node conformance images', () => {
  test('each is pulled through the mirror under the name and tag the suite uses', async () => {
    for (const spec of CONFORMANCE_IMAGES) {
      await callUnary(h.images, 'PullImage', { image: { image: spec.reference } }, { timeoutMs: 120_000 });
      const { image } = await callUnary(h.images, 'ImageStatus', { image: { image: spec.reference } }, { timeoutMs: 10_000 });
      assert.ok(image?.repo_tags.includes(spec.reference), `${spec.reference}: ${JSON.stringify(image?.repo_tags)}`);
    }
  });

  test('busybox has the busybox userland with nmeter and runs sh', async () => {
    const id = await start('busybox', { command: ['sleep', '600'] });
    const result = await h.exec(id, ['sh', '-c', 'id -u; /bin/sysctl -n kernel.shm_rmid_forced; date -u +%FT$(nmeter -d0 "%3t" | head -n1)Z']);
    assert.equal(result.code, 0, result.stderr);
    // The sysctl specs run /bin/sysctl; the container lifecycle specs parse this timestamp, milliseconds included.
    assert.match(result.stdout, /^0\n[01]\n\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\n$/);
  });

  test("busybox's shell passes on environment variables whose names are not shell names", async () => {
    // The ConfigMap and Secret environment specs give a container data-1 and expect `sh -c env` to print it.
    const id = await start('busybox', { command: ['sleep', '600'], envs: [{ key: 'data-1', value: Buffer.from('value-1') }] });
    const result = await h.exec(id, ['sh', '-c', 'env']);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^data-1=value-1$/m);
  });

  test('agnhost runs pause by default, serves netexec, has bash and curl, and its user 1000 is in group 50000', async () => {
    const paused = await start('agnhost');
    assert.equal((await h.containerStatus(paused)).state, 'CONTAINER_RUNNING');
    const server = await start('agnhost', { args: ['netexec', '--http-port=8080'] });
    const hostname = await until('netexec to answer', 30_000, async () => {
      const result = await h.exec(server, ['wget', '-qO-', 'http://127.0.0.1:8080/hostname']);
      return result.code === 0 ? result.stdout : undefined;
    });
    assert.equal(hostname, pod.config.hostname);
    // The exec hooks call netexec with curl.
    const echoed = await h.exec(server, ['sh', '-c', 'curl -s http://127.0.0.1:8080/echo?msg=hook']);
    assert.equal(echoed.stdout, 'hook', echoed.stderr);
    // The lifecycle hook specs serve HTTPS with the certificate the image brings.
    const tls = await start('agnhost', { args: ['netexec', '--http-port=8443', '--udp-port=-1', '--tls-cert-file=/localhost.crt', '--tls-private-key-file=/localhost.key'] });
    await until('netexec to serve TLS', 30_000, async () => ((await h.exec(tls, ['bash', '-c', 'exec 3<>/dev/tcp/127.0.0.1/8443'])).code === 0 ? true : undefined));
    const user = await start('agnhost', { command: ['sh', '-c', 'sleep 600'], linux: { security_context: { run_as_user: { value: 1000 } } } });
    const groups = await h.exec(user, ['id', '-G']);
    assert.deepEqual(groups.stdout.trim().split(' ').sort(), ['1000', '50000']);
    const second = await h.exec(user, ['/agnhost-2', '--help']);
    assert.equal(second.code, 0, second.stderr);
    assert.equal((await h.exec(user, ['/bin/bash', '-c', 'echo ${BASH_VERSINFO[0]} >/dev/null && echo bash'])).stdout, 'bash\n');
  });

  test("agnhost's private fake registry serves pause:testing to a pull with its credentials only", async () => {
    const port = await getFreePort();
    const hostNetwork = await h.runPod({ linux: { security_context: { namespace_options: { network: 'NODE' } } } });
    await h.runContainer(hostNetwork, 'fake-registry', {
      image: { image: reference('agnhost') },
      command: [],
      args: ['fake-registry-server', '--private', `--port=${port}`],
    });
    const image = { image: `localhost:${port}/pause:testing` };
    const auth = { username: 'user', password: 'password' };
    await until('the fake registry to serve pause:testing', 30_000, async () =>
      (await callUnary(h.images, 'PullImage', { image, auth }, { timeoutMs: 60_000 }).catch(() => undefined))?.image_ref,
    );
    const { image: pulled } = await callUnary(h.images, 'ImageStatus', { image }, { timeoutMs: 10_000 });
    const pause = await callUnary(h.images, 'ImageStatus', { image: { image: reference('pause') } }, { timeoutMs: 10_000 });
    assert.equal(pulled?.id, pause.image?.id, 'the same image as pause');
    await assert.rejects(callUnary(h.images, 'PullImage', { image }, { timeoutMs: 60_000 }), /authentication required/);
  });

  test('nginx serves its page on port 80', async () => {
    const id = await start('nginx');
    const page = await until('nginx to answer', 30_000, async () => {
      const result = await h.exec(id, ['wget', '-qO-', 'http://127.0.0.1/']);
      return result.code === 0 ? result.stdout : undefined;
    });
    assert.match(page, /Welcome to nginx!/);
  });

  test('nonewprivs: nnp is setuid root, unless no_new_privs is set', async () => {
    const asUser = { run_as_user: { value: 1000 } };
    const escalating = await start('nonewprivs', { command: ['sleep', '600'], linux: { security_context: asUser } });
    assert.equal((await h.exec(escalating, ['nnp'])).stdout, 'Effective uid: 0\n');
    const confined = await start('nonewprivs', { command: ['sleep', '600'], linux: { security_context: { ...asUser, no_new_privs: true } } });
    assert.equal((await h.exec(confined, ['nnp'])).stdout, 'Effective uid: 1000\n');
  });

  test('nonroot runs as uid 1234', async () => {
    const id = await start('nonroot', { command: ['sleep', '600'] });
    assert.equal((await h.exec(id, ['id', '-u'])).stdout, '1234\n');
  });

  test('perl, ipc-utils and glibc-dns-testing bring their tools', async () => {
    const perl = await start('perl', { command: ['sleep', '600'] });
    assert.equal((await h.exec(perl, ['perl', '-e', 'print 6*7'])).stdout, '42');
    const ipc = await start('ipc-utils', { command: ['sleep', '600'] });
    const made = await h.exec(ipc, ['ipcmk', '-M', '4096']);
    assert.equal(made.code, 0, made.stderr);
    const segment = /(\d+)\s*$/.exec(made.stdout)![1]!;
    assert.match((await h.exec(ipc, ['ipcs', '-m', '-i', segment])).stdout, /bytes=4096/);
    const dns = await start('glibc-dns-testing', { command: ['sleep', '600'] });
    const names = await h.exec(dns, ['sh', '-c', 'echo "127.0.0.1 $(hostname).sub.example $(hostname)" > /etc/hosts; hostname -f']);
    assert.equal(names.stdout, `${pod.config.hostname}.sub.example\n`, names.stderr);
  });

  test('sample-device-plugin brings the plugin the device plugin specs run', async () => {
    const id = await start('sample-device-plugin', { command: ['sleep', '600'] });
    // It serves the device plugin API on a socket in PLUGIN_SOCK_DIR (the kubelet's, in the specs).
    const plugin = await h.exec(id, ['sh', '-c', 'mkdir /tmp/dp; PLUGIN_SOCK_DIR=/tmp/dp /sampledeviceplugin >/dev/null 2>&1 & sleep 2; ls /tmp/dp']);
    assert.match(plugin.stdout, /^dp\.\d+\n/, plugin.stderr);
  });

  test('pause runs /pause as 65535 until stopped', async () => {
    const id = await start('pause');
    const status = await h.containerStatus(id);
    assert.equal(status.state, 'CONTAINER_RUNNING');
    const { info } = await callUnary(h.runtime, 'ContainerStatus', { container_id: id, verbose: true }, { timeoutMs: 10_000 });
    const { pid } = JSON.parse(info['info']!) as { pid: number };
    assert.match(readFileSync(`/proc/${pid}/status`, 'utf8'), /^Uid:\t65535\t/m);
    assert.equal(readFileSync(`/proc/${pid}/cmdline`, 'utf8'), '/pause\0-P\0');
    await callUnary(h.runtime, 'StopContainer', { container_id: id, timeout: 10 }, { timeoutMs: 30_000 });
    assert.equal((await h.containerStatus(id)).exit_code, 0);
  });
});
