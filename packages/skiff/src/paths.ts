import { join } from 'node:path';
import type { SkiffConfig } from '@skiff/common/core';

export function supervisorPidFile(config: SkiffConfig): string {
  return join(config.run_dir, 'skiff.pid');
}
