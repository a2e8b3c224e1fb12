/**
 * The NRI plugin the NRI tests run (tools/nri-plugins, on the plugin stub of containerd/nri),
 * built by scripts/nri-plugins.sh into a cache, and plugin processes started against a socket.
 *
 *   nriPluginBinary(): Promise<string>     its path; builds it first if the cache lacks it
 *   startNriPlugin(binary, socket, args, registered): Promise<NriPluginProcess>
 *       runs it with -socket and args; resolves once `registered()` is true (e.g. the runtime logged it)
 *   interface NriPluginProcess { child, output(): string, exited: Promise<number | null>, stop(): Promise<void> }
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from './skiff-instance.js';

const run = promisify(execFile);
let bin: Promise<string> | undefined;

export function nriPluginBinary(): Promise<string> {
  bin ??= run('bash', [join(REPO_ROOT, 'scripts/nri-plugins.sh')], { timeout: 20 * 60_000 }).then(({ stdout }) => join(stdout.trim().split('\n').pop() ?? '', 'nri-test-plugin'));
  return bin;
}

export interface NriPluginProcess {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
  stop(): Promise<void>;
}

export async function startNriPlugin(binary: string, socket: string, args: string[], registered: () => boolean, timeoutMs = 20_000): Promise<NriPluginProcess> {
  const child = spawn(binary, ['-socket', socket, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let done = false;
  void exited.then(() => (done = true));
  const plugin: NriPluginProcess = {
    child,
    output: () => output,
    exited,
    async stop() {
      if (!done) child.kill('SIGTERM');
      await exited;
    },
  };
  const deadline = Date.now() + timeoutMs;
  while (!registered()) {
    if (done) throw new Error(`NRI plugin ${args.join(' ')} exited before it registered: ${output}`);
    if (Date.now() > deadline) {
      await plugin.stop();
      throw new Error(`NRI plugin ${args.join(' ')} did not register within ${timeoutMs} ms: ${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return plugin;
}
