import { spawn } from 'node:child_process';
import { BARRIER_FIELD } from './journal-entry.js';

export const LOGGER_PATH = '/usr/bin/logger';

/**
 * Sends a barrier entry to journald over its native socket, the one conmon sends container output
 * on: journald takes that socket's datagrams in order, so once the reader meets the barrier every
 * line sent before it has been read too. The barrier counts only with the sender's pid, which
 * journald records from the socket's credentials: anyone may write the field, not as that pid.
 */
export function sendBarrier(nonce: string, logger = LOGGER_PATH): { pid: number | undefined; sent: Promise<void> } {
  const child = spawn(logger, ['--journald'], { stdio: ['pipe', 'ignore', 'pipe'] });
  const sent = new Promise<void>((resolve, reject) => {
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.on('error', (err) => reject(new Error(`cannot run ${logger}: ${err.message}`)));
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${logger} --journald failed (${code}): ${stderr.trim()}`))));
    child.stdin!.end(`MESSAGE=skiff logs-svc barrier ${nonce}\nSYSLOG_IDENTIFIER=skiff-logs\n${BARRIER_FIELD}=${nonce}\n`);
  });
  return { pid: child.pid, sent };
}
