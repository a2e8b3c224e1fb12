/**
 * The pod the streaming tests work in, on a real `skiff up`: an idle `app` container to exec in
 * and an echo server (`nc`, one `cat` per connection) on the given port to forward to.
 */
import { startRuntimeHarness, type Pod, type RuntimeHarness } from './runtime-harness.js';

export interface StreamPod {
  h: RuntimeHarness;
  pod: Pod;
  app: string;
}

export async function startStreamPod(echoPort: number): Promise<StreamPod> {
  const h = await startRuntimeHarness();
  const pod = await h.runPod();
  const app = await h.runContainer(pod, 'app');
  await h.runContainer(pod, 'echo', { command: ['nc', '-ll', '-p', String(echoPort), '-e', 'cat'] });
  return { h, pod, app };
}
