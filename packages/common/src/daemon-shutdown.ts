import type { Logger } from './logger.js';

/**
 * Stops a daemon once on SIGTERM, SIGINT, or — under the supervisor, whose pipe is our stdin — when
 * the supervisor is gone. `stop` closes what the daemon holds; the process then exits 0.
 */
export function stopOnSignals(log: Logger, stop: () => Promise<void>): void {
  let stopping = false;
  const shutdown = (reason: string): void => {
    if (stopping) return;
    stopping = true;
    log.info({ reason }, 'stopping');
    stop()
      .catch((err: unknown) => log.error({ err: err instanceof Error ? err.message : String(err) }, 'error while stopping'))
      .finally(() => process.exit(0));
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
  if (process.env['SKIFF_SUPERVISED'] === '1') {
    process.stdin.on('end', () => shutdown('supervisor exited')).resume();
  }
}
