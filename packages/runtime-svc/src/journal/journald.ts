import { runCommand } from '@skiff/common';

export type JournalEntry = Record<string, string | number[] | null>;

/** Journal entries matching every field=value given (journalctl's match syntax), oldest first. */
export async function readJournal(matches: Record<string, string>, options: { timeoutMs?: number } = {}): Promise<JournalEntry[]> {
  const args = ['--no-pager', '-o', 'json', ...Object.entries(matches).map(([k, v]) => `${k}=${v}`)];
  const result = await runCommand('journalctl', args, { timeoutMs: options.timeoutMs ?? 15_000 });
  if (result.code !== 0 && result.code !== 1) throw new Error(`journalctl failed: ${result.stderr.trim()}`);
  return result.stdout
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as JournalEntry);
}

/** A journal MESSAGE as text (journalctl prints non-UTF-8 messages as byte arrays). */
export function journalMessage(entry: JournalEntry): string {
  const m = entry['MESSAGE'];
  if (Array.isArray(m)) return Buffer.from(m).toString('utf8');
  return m ?? '';
}
