import { existsSync, promises as fs } from 'node:fs';
import { join } from 'node:path';
import { runCommand } from '@skiff/common/core';
import { SERVICES } from '../services.js';
import { skiffUnits } from '../systemd-units.js';

export const SYSTEMD_UNIT_DIR = '/etc/systemd/system';

/** Whether systemd runs this machine (PID 1), as sd_booted(3) tells. */
export function systemdRuns(): boolean {
  return existsSync('/run/systemd/system');
}

/**
 * Writes the unit files of the four services and skiff.target into `dest`, and where systemd
 * runs the machine reloads it and enables the target (which starts the services at boot).
 */
export async function installUnitsCommand(configPath: string, dest: string = SYSTEMD_UNIT_DIR): Promise<number> {
  await fs.mkdir(dest, { recursive: true, mode: 0o755 });
  const units = skiffUnits(SERVICES, { node: process.execPath, configPath });
  for (const [name, text] of units) await fs.writeFile(join(dest, name), text, { mode: 0o644 });
  process.stdout.write(`wrote ${[...units.keys()].join(', ')} to ${dest}\n`);
  if (dest !== SYSTEMD_UNIT_DIR || !systemdRuns()) {
    process.stdout.write('systemd does not run this machine (or the units went elsewhere): start Skiff with "skiff up"\n');
    return 0;
  }
  for (const args of [['daemon-reload'], ['enable', 'skiff.target', ...[...units.keys()].filter((n) => n !== 'skiff.target')]]) {
    const result = await runCommand('systemctl', args, { timeoutMs: 60_000 });
    if (result.code !== 0) {
      process.stderr.write(`systemctl ${args.join(' ')} failed: ${result.stderr.trim()}\n`);
      return 1;
    }
  }
  process.stdout.write('enabled skiff.target: "systemctl start skiff.target" starts the services\n');
  return 0;
}
