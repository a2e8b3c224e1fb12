import { spawn } from 'node:child_process';
import type { Logger } from './logger.js';

/**
 * Tells systemd the daemon is ready (Type=notify units), once its socket listens. Node cannot
 * send on a datagram unix socket, so systemd-notify does, on our behalf (--pid; the unit has
 * NotifyAccess=all). Outside systemd (no NOTIFY_SOCKET) it does nothing.
 */
export function notifyReady(log: Logger): void {
  if (!process.env['NOTIFY_SOCKET']) return;
  const child = spawn('systemd-notify', ['--ready', `--pid=${process.pid}`], { stdio: 'ignore' });
  child.on('error', (err) => log.error({ err: err.message }, 'systemd-notify could not be run; systemd will not see this service as ready'));
  child.on('exit', (code) => {
    if (code !== 0) log.error({ code }, 'systemd-notify failed; systemd will not see this service as ready');
  });
}
