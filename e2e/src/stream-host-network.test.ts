/**
 * Port-forward into a pod on the host's network: stream-svc dials the port on loopback from the
 * namespace it shares with the runtime (never PID 1's, which may not even be readable), on
 * 127.0.0.1 and, when IPv4 refuses, on ::1, as the kubelet's own port-forward does.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { callUnary } from '@skiff/proto';
import { getFreePort } from './lib/free-port.js';
import { startRuntimeHarness, type Pod, type RuntimeHarness } from './lib/runtime-harness.js';
import { eventually, wsForwardOnce } from './lib/stream-client.js';

let h: RuntimeHarness;
let pod: Pod;
const ports: Record<'v4' | 'v6', number> = { v4: 0, v6: 0 };

before(async () => {
  h = await startRuntimeHarness();
  pod = await h.runPod({ linux: { security_context: { namespace_options: { network: 'NODE' } } } });
  ports.v4 = await getFreePort();
  ports.v6 = await getFreePort();
  // busybox's nc cannot bind one address; its httpd can.
  await h.runContainer(pod, 'http-v4', { command: ['httpd', '-f', '-p', `127.0.0.1:${ports.v4}`, '-h', '/tmp'] });
  await h.runContainer(pod, 'http-v6', { command: ['httpd', '-f', '-p', `[::1]:${ports.v6}`, '-h', '/tmp'] });
});

after(async () => {
  await h?.stop();
});

describe('port-forward into a hostNetwork pod', () => {
  for (const family of ['v4', 'v6'] as const) {
    test(`reaches a server listening on IP${family} loopback only`, async () => {
      const request = Buffer.from('GET / HTTP/1.0\r\n\r\n');
      let answer: { data: Buffer; error: string } = { data: Buffer.alloc(0), error: '' };
      // The server in the pod may not listen yet right after StartContainer.
      await eventually(`the IP${family} HTTP server to answer`, async () => {
        const url = (await callUnary(h.runtime, 'PortForward', { pod_sandbox_id: pod.id, port: [ports[family]] })).url;
        answer = await wsForwardOnce(url, request, 'HTTP/1.1 404'.length, 10_000);
        return answer.data.length > 0;
      });
      assert.match(answer.data.toString(), /^HTTP\/1\.[01] \d{3} /);
      assert.equal(answer.error, '');
    });
  }
});
