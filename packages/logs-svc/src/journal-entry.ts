import type { JournalFields } from './journal-export.js';
import type { StreamName } from './cri-format.js';

/** The field logs-svc's own barrier entries carry, with a unique value per barrier. */
export const BARRIER_FIELD = 'SKIFF_LOGS_BARRIER';
/** journald's "Suppressed N messages from ..." notice (SD_MESSAGE_JOURNAL_DROPPED). */
export const SUPPRESSED_MESSAGE_ID = 'a596d6fe7bfa4994828e72309e95d61e';

/** What an entry from the journal means to logs-svc. */
export type JournalEvent =
  | { kind: 'output'; cursor: string; containerId: string; stream: StreamName; partial: boolean; message: Buffer; realtimeMicros: bigint }
  | { kind: 'barrier'; cursor: string; nonce: string }
  | { kind: 'suppressed'; cursor: string; count: number; text: string }
  | { kind: 'other'; cursor: string };

function text(fields: JournalFields, name: string): string | undefined {
  return fields.get(name)?.toString('utf8');
}

/**
 * Classifies an entry: container output as conmon's journald driver sends it (MESSAGE with the
 * line's newline unless CONTAINER_PARTIAL_MESSAGE=true, CONTAINER_ID_FULL, PRIORITY 6 for stdout
 * and 3 for stderr), a barrier of ours, or a rate-limit notice of journald's.
 */
export function classifyEntry(fields: JournalFields): JournalEvent {
  const cursor = text(fields, '__CURSOR') ?? '';
  const nonce = text(fields, BARRIER_FIELD);
  if (nonce !== undefined) return { kind: 'barrier', cursor, nonce };
  const containerId = text(fields, 'CONTAINER_ID_FULL');
  if (containerId !== undefined) {
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
  if (text(fields, 'MESSAGE_ID') === SUPPRESSED_MESSAGE_ID) {
    const message = text(fields, 'MESSAGE') ?? '';
    const m = /Suppressed (\d+) messages/.exec(message);
    return { kind: 'suppressed', cursor, count: m ? Number(m[1]) : 0, text: message };
  }
  return { kind: 'other', cursor };
}
