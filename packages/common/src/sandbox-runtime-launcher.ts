import { promises as fs } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { runCommand } from './run-command.js';
import type { RuntimeBinary } from './runtime-binary.js';

/**
 * What conmon runs in place of a sandbox-kind runtime (runsc), with the runtime's path as its
 * first argument: see helpers/sandbox-runtime.sh.
 */
export const SANDBOX_RUNTIME_LAUNCHER = fileURLToPath(new URL('../helpers/sandbox-runtime.sh', import.meta.url));

/** Where the launcher has runsc write, for an exec given `pidFile`, the process's pid inside the sandbox. */
export function innerPidFile(pidFile: string): string {
  return `${pidFile}.inner`;
}

/**
 * SIGKILLs, inside its sandbox, the process an exec started through the launcher: killing
 * `runsc exec` on the host leaves that process running, as SIGKILL cannot be forwarded. False when
 * it had not started or was gone already.
 */
export async function killSandboxedExec(runtime: RuntimeBinary, containerId: string, pidFile: string): Promise<boolean> {
  const pid = Number.parseInt(await fs.readFile(innerPidFile(pidFile), 'utf8').catch(() => ''), 10);
  if (!Number.isInteger(pid) || pid <= 0) return false;
  const result = await runCommand(runtime.path, ['--root', runtime.root, ...runtime.args, 'kill', '--pid', String(pid), containerId, 'KILL'], { timeoutMs: 10_000 });
  return result.code === 0;
}
