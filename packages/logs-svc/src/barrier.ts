import { spawn } from 'node:child_process';
import { JOURNALD_NATIVE_SOCKET, type SpawnServer } from '@skiff/common/core';
import { BARRIER_FIELD } from './journal-entry.js';

export const LOGGER_PATH = '/usr/bin/logger';

/**
 * Sends barrier entries to journald over its native socket, the one conmon sends container output
 * on: journald takes that socket's datagrams in order, so once the reader meets the barrier every
 * line sent before it has been read too. A barrier counts only with its sender's pid, which
 * journald records from the socket's credentials: anyone may write the field, not as that pid.
 *
 * The sender is the spawn helper while it runs (one datagram, well under a millisecond); else
 * logger(1), ~5 ms a run, and the helper is started for the barriers to come. It ends after a
 * while without any, so an idle logs-svc keeps no helper.
 */
export class BarrierSender {
  constructor(
    private readonly logger = LOGGER_PATH,
    private readonly helper?: SpawnServer,
    private readonly socket = JOURNALD_NATIVE_SOCKET,
  ) {}

  /**
   * Sends the barrier `nonce`. `sender` is told the pid that sends it before the entry can be
   * read, and again if it changes (the helper failed, logger sends it instead).
   */
  async send(nonce: string, sender: (pid: number | undefined) => void): Promise<void> {
    const entry = `MESSAGE=skiff logs-svc barrier ${nonce}\nSYSLOG_IDENTIFIER=skiff-logs\n${BARRIER_FIELD}=${nonce}\n`;
    const helperPid = this.helper?.helperPid;
    if (this.helper && helperPid !== undefined) {
      sender(helperPid);
      const outcome = await this.helper.systemCall({ call: 'send', target: this.socket, data: Buffer.from(entry).toString('base64') }).catch(() => undefined);
      if (outcome && 'done' in outcome) return;
    } else {
      this.helper?.warm();
    }
    await sendWithLogger(entry, this.logger, sender);
  }
}

function sendWithLogger(entry: string, logger: string, sender: (pid: number | undefined) => void): Promise<void> {
  const child = spawn(logger, ['--journald'], { stdio: ['pipe', 'ignore', 'pipe'] });
  sender(child.pid);
  return new Promise<void>((resolve, reject) => {
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.on('error', (err) => reject(new Error(`cannot run ${logger}: ${err.message}`)));
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${logger} --journald failed (${code}): ${stderr.trim()}`))));
    child.stdin!.end(entry);
  });
}
