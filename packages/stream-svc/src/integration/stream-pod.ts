import { createRequire } from 'node:module';
import { join } from 'node:path';
import { callUnary, type cri } from '@skiff/proto';
import { containerConfig, podConfig, TestDaemon, addBusyboxImage } from '@skiff/test-support';
import { StreamDaemon } from './stream-daemon.js';

const IMAGE = 'docker.io/library/busybox:stream-test';
/** runtime-svc as built in this workspace (a declared devDependency). */
const RUNTIME_MAIN = createRequire(import.meta.url).resolve('@skiff/runtime-svc/main');

export interface StreamPod {
  runtime: TestDaemon;
  stream: StreamDaemon;
  podId: string;
  containerId: string;
  stop(): Promise<void>;
}

/** A runtime daemon and a stream daemon sharing one configuration, and one pod running `command`. */
export async function startStreamPod(name: string, command: string[], streamToml = '', overrides: Partial<cri.ContainerConfig> = {}): Promise<StreamPod> {
  const runtime = await TestDaemon.create({ entry: RUNTIME_MAIN, network: true, runtimeToml: `[stream]\naddress = "127.0.0.1"\nport = 0\n${streamToml}` });
  const stream = new StreamDaemon(runtime.configPath);
  const stop = async (): Promise<void> => {
    await stream.stop();
    await runtime.cleanup();
  };
  try {
    await addBusyboxImage(join(runtime.root, 'images'), IMAGE, { Env: ['PATH=/bin'] });
    await runtime.start();
    await stream.start();
    const sandboxConfig: cri.PodSandboxConfig = podConfig(join(runtime.base, 'logs'));
    const podId = (await callUnary(runtime.client, 'RunPodSandbox', { config: sandboxConfig })).pod_sandbox_id;
    const config = containerConfig(name, IMAGE, { command, ...overrides });
    const containerId = (await callUnary(runtime.client, 'CreateContainer', { pod_sandbox_id: podId, config, sandbox_config: sandboxConfig })).container_id;
    await callUnary(runtime.client, 'StartContainer', { container_id: containerId });
    return { runtime, stream, podId, containerId, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
