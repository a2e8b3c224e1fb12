import { spawn } from 'node:child_process';
import { ExportParser } from './journal-export.js';
import { classifyEntry, type OutputEvent, type TrustedSender } from './journal-entry.js';
import { entryAtOrBefore, type JournalPosition } from './journal-position.js';
import { OUTPUT_FIELDS } from './journal-reader.js';

export interface ReadBackOptions {
  journalctl: string;
  containerId: string;
  /** Who may send container output. */
  sender: TrustedSender;
  /** The follower's position: only entries at or before it are read back, it takes the rest. */
  until: JournalPosition;
}

/**
 * A container's output already in the journal, oldest first, up to the follower's position: read
 * by the container's own `CONTAINER_ID_FULL` (journald's index of the field), so the saved cursor,
 * which may have passed the entries while nobody followed the container, does not matter. Batches
 * come as journalctl's output is read; the next one is read only once the caller asks, so a long
 * history never sits in memory whole.
 */
export async function* readBackContainerOutput(o: ReadBackOptions): AsyncGenerator<OutputEvent[]> {
  const args = ['--all', '--quiet', '--no-pager', '--output', 'export', `--output-fields=${OUTPUT_FIELDS}`, '_TRANSPORT=journal', `CONTAINER_ID_FULL=${o.containerId}`];
  const child = spawn(o.journalctl, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => {
    if (stderr.length < 4096) stderr += c.toString('utf8');
  });
  const closed = new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  closed.catch(() => undefined);
  const parser = new ExportParser();
  let past = false;
  try {
    for await (const chunk of child.stdout as AsyncIterable<Buffer>) {
      const batch: OutputEvent[] = [];
      for (const fields of parser.push(chunk)) {
        const event = classifyEntry(fields, o.sender);
        if (event.kind !== 'output' || event.containerId !== o.containerId) continue;
        if (!entryAtOrBefore(event, o.until)) {
          past = true;
          break;
        }
        batch.push(event);
      }
      if (batch.length > 0) yield batch;
      if (past) break;
    }
  } finally {
    if (past || child.exitCode === null) child.kill('SIGTERM');
  }
  const code = await closed;
  if (!past && code !== 0) throw new Error(`journalctl ${args.join(' ')} exited ${code}${stderr.trim() ? `: ${stderr.trim()}` : ''}`);
}
