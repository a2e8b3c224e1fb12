import { isProcessAlive, pollUntil, type SkiffConfig } from '@skiff/common/core';
import { runningSupervisorPid } from './status.js';

/** Stops the supervisor and with it the services. Containers keep running: they belong to their monitors. */
export async function downCommand(config: SkiffConfig, timeoutMs = 30_000): Promise<number> {
  const pid = await runningSupervisorPid(config);
  if (pid === undefined) {
    process.stdout.write('skiff is not running\n');
    return 0;
  }
  process.kill(pid, 'SIGTERM');
  const exited = await pollUntil(async () => (isProcessAlive(pid) ? undefined : true), timeoutMs, 100);
  if (!exited) {
    process.stderr.write(`skiff supervisor (pid ${pid}) did not stop within ${timeoutMs / 1000}s\n`);
    return 1;
  }
  process.stdout.write(`skiff stopped (supervisor pid ${pid})\n`);
  return 0;
}
