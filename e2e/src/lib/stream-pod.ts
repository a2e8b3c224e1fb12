/**
 * The pod the streaming tests work in, on a real `skiff up`: an idle `app` container to exec in
 * and an echo server (`nc`, one `cat` per connection) on the given port to forward to.
 */
import { callUnary, type cri } from '@skiff/proto';
import { busyboxEchoServer } from '@skiff/test-support';
import { startRuntimeHarness, type Pod, type RuntimeHarness, type RuntimeHarnessOptions } from './runtime-harness.js';

export class StreamPod {
  private constructor(
    readonly h: RuntimeHarness,
    readonly pod: Pod,
    readonly app: string,
  ) {}

  static async start(echoPort: number, skiff?: RuntimeHarnessOptions['skiff']): Promise<StreamPod> {
    const h = await startRuntimeHarness(skiff ? { skiff } : {});
    const pod = await h.runPod();
    const app = await h.runContainer(pod, 'app');
    await h.runContainer(pod, 'echo', { command: busyboxEchoServer(echoPort) });
    return new StreamPod(h, pod, app);
  }

  /** The stream URL of an Exec in the app container. */
  async execUrl(cmd: string[], streams: Partial<cri.ExecRequest> = { stdout: true, stderr: true }): Promise<string> {
    return (await callUnary(this.h.runtime, 'Exec', { container_id: this.app, cmd, ...streams })).url;
  }

  /** The stream URL of a PortForward into the pod; no ports lets the client name them per stream. */
  async forwardUrl(ports: number[] = []): Promise<string> {
    return (await callUnary(this.h.runtime, 'PortForward', { pod_sandbox_id: this.pod.id, port: ports })).url;
  }
}
