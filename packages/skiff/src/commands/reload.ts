import { isProcessAlive, readPidFile, type SkiffConfig } from '@skiff/common/core';
import { SERVICES } from '../services.js';
import { commandLineOf, servicePidFile } from '../service-processes.js';

/**
 * Sends SIGHUP to every running service: each re-reads skiff.toml (and registries.conf), applies
 * what can change live and logs what needs a restart; a bad file changes nothing.
 */
export async function reloadCommand(config: SkiffConfig): Promise<number> {
  let signalled = 0;
  for (const spec of SERVICES) {
    const pid = await readPidFile(servicePidFile(config.run_dir, spec.name));
    // The pid must still be this service's (a pid file can outlive its process).
    const ours = pid !== undefined && isProcessAlive(pid) && commandLineOf(pid).includes(spec.entry);
    if (!ours) {
      process.stdout.write(`${spec.name}: not running\n`);
      continue;
    }
    process.kill(pid, 'SIGHUP');
    signalled++;
    process.stdout.write(`${spec.name}: reloading (pid ${pid}); see its log for what changed\n`);
  }
  return signalled > 0 ? 0 : 1;
}
