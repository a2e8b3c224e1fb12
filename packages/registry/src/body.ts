import type { Readable } from 'node:stream';
import type { RegistryError } from './errors.js';

const ERROR_BODY_LIMIT = 64 * 1024;

/** Reads a whole body, destroying the stream and throwing `tooLarge()` once it passes `limit` bytes. */
export async function readBody(stream: Readable, limit: number, tooLarge: () => RegistryError): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of stream) {
    const buf = chunk as Buffer;
    total += buf.length;
    if (total > limit) {
      const err = tooLarge();
      stream.destroy();
      throw err;
    }
    chunks.push(buf);
  }
  return Buffer.concat(chunks, total);
}

/** Lets an unwanted body flow away so the connection can be reused. */
export function discardBody(stream: Readable): void {
  stream.on('error', () => undefined);
  stream.resume();
}

/** The distribution API's {"errors":[{code,message,detail}]} as one line, or the start of a plain-text body. */
export async function readErrorSummary(stream: Readable): Promise<string> {
  let text: string;
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    for await (const chunk of stream) {
      const buf = chunk as Buffer;
      chunks.push(buf);
      total += buf.length;
      if (total >= ERROR_BODY_LIMIT) {
        stream.destroy();
        break;
      }
    }
    text = Buffer.concat(chunks).toString('utf8');
  } catch {
    return '';
  }
  return summarizeErrorBody(text);
}

export function summarizeErrorBody(text: string): string {
  try {
    const parsed = JSON.parse(text) as { errors?: unknown; error?: unknown; details?: unknown };
    if (Array.isArray(parsed.errors)) {
      const parts = parsed.errors
        .filter((e): e is { code?: unknown; message?: unknown } => typeof e === 'object' && e !== null)
        .map((e) => [e.code, e.message].filter((v) => typeof v === 'string' && v !== '').join(': '))
        .filter((s) => s !== '');
      if (parts.length > 0) return parts.join('; ');
    }
    if (typeof parsed.error === 'string') return parsed.error;
    if (typeof parsed.details === 'string') return parsed.details;
  } catch {
    // not JSON
  }
  return text.replace(/\s+/g, ' ').trim().slice(0, 200);
}
