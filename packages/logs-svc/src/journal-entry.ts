import type { JournalFields } from './journal-export.js';
import type { StreamName } from '@skiff/common/core';

/** The field logs-svc's own barrier entries carry, with a unique value per barrier. */
export const BARRIER_FIELD = 'SKIFF_LOGS_BARRIER';
/** journald's "Suppressed N messages from ..." notice (SD_MESSAGE_JOURNAL_DROPPED). */
export const SUPPRESSED_MESSAGE_ID = 'a596d6fe7bfa4994828e72309e95d61e';

/**
 * The process allowed to send container output: journald records who sent each entry in fields
 * the sender cannot set (`_UID` from the socket's credentials, `_COMM` and `_EXE` from /proc).
 */
export interface TrustedSender {
  /** The command name (`_COMM`), e.g. "conmon". */
  comm: string;
  /** The executable's resolved path (`_EXE`), e.g. "/usr/bin/conmon". */
  exe: string;
}

/** What an entry from the journal means to logs-svc. */
export type JournalEvent =
  | { kind: 'output'; cursor: string; containerId: string; stream: StreamName; partial: boolean; message: Buffer; realtimeMicros: bigint }
  | { kind: 'barrier'; cursor: string; nonce: string; senderPid: number; senderUid: number }
  | { kind: 'suppressed'; cursor: string; count: number; text: string }
  | { kind: 'untrusted'; cursor: string; containerId: string; sender: string }
  | { kind: 'other'; cursor: string };

/** A container's output line, as the follower and a read-back both take it. */
export type OutputEvent = Extract<JournalEvent, { kind: 'output' }>;

/** The journald-set fields naming an entry's sender. */
export const SENDER_FIELDS = ['_UID', '_PID', '_COMM', '_EXE', '_TRANSPORT'] as const;

function text(fields: JournalFields, name: string): string | undefined {
  return fields.get(name)?.toString('utf8');
}

function numeric(fields: JournalFields, name: string): number {
  const value = text(fields, name);
  return value !== undefined && /^\d+$/.test(value) ? Number(value) : -1;
}

/**
 * Whether root's conmon sent the entry. `_UID` comes from the socket's credentials, which the
 * kernel checks: only root can send with `_UID=0`, so no other local user passes. `_COMM` and
 * `_EXE` keep out root's other processes. journald reads those two from /proc when it takes the
 * entry in, so they are missing when the sender has exited by then (conmon does, right after a
 * container's last lines): a root entry without them is taken.
 */
export function sentBy(fields: JournalFields, sender: TrustedSender): boolean {
  if (numeric(fields, '_UID') !== 0) return false;
  const comm = text(fields, '_COMM');
  const exe = text(fields, '_EXE');
  return (comm === undefined || comm === sender.comm) && (exe === undefined || exe === sender.exe);
}

function describeSender(fields: JournalFields): string {
  return SENDER_FIELDS.filter((f) => f !== '_TRANSPORT')
    .map((f) => `${f}=${text(fields, f) ?? '(none)'}`)
    .join(' ');
}

/**
 * Classifies an entry: container output as conmon's journald driver sends it (MESSAGE with the
 * line's newline unless CONTAINER_PARTIAL_MESSAGE=true, CONTAINER_ID_FULL, PRIORITY 6 for stdout
 * and 3 for stderr), a barrier of ours, or a rate-limit notice of journald's. Container output
 * from anyone but the trusted sender is `untrusted`, and a rate-limit notice counts only when
 * journald itself wrote it.
 */
export function classifyEntry(fields: JournalFields, sender: TrustedSender): JournalEvent {
  const cursor = text(fields, '__CURSOR') ?? '';
  const nonce = text(fields, BARRIER_FIELD);
  if (nonce !== undefined) return { kind: 'barrier', cursor, nonce, senderPid: numeric(fields, '_PID'), senderUid: numeric(fields, '_UID') };
  const containerId = text(fields, 'CONTAINER_ID_FULL');
  if (containerId !== undefined) {
    if (!sentBy(fields, sender)) return { kind: 'untrusted', cursor, containerId, sender: describeSender(fields) };
    const realtime = text(fields, '__REALTIME_TIMESTAMP');
    return {
      kind: 'output',
      cursor,
      containerId,
      stream: text(fields, 'PRIORITY') === '3' ? 'stderr' : 'stdout',
      partial: text(fields, 'CONTAINER_PARTIAL_MESSAGE') === 'true',
      message: fields.get('MESSAGE') ?? Buffer.alloc(0),
      realtimeMicros: realtime && /^\d+$/.test(realtime) ? BigInt(realtime) : BigInt(Date.now()) * 1000n,
    };
  }
  if (text(fields, 'MESSAGE_ID') === SUPPRESSED_MESSAGE_ID && text(fields, '_TRANSPORT') === 'driver') {
    const message = text(fields, 'MESSAGE') ?? '';
    const m = /Suppressed (\d+) messages/.exec(message);
    return { kind: 'suppressed', cursor, count: m ? Number(m[1]) : 0, text: message };
  }
  return { kind: 'other', cursor };
}
