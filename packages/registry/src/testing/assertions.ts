import assert from 'node:assert/strict';
import { RegistryError } from '../errors.js';

export async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Awaits `promise` and checks that it failed with a RegistryError of `kind` (and `message`). */
export async function rejectsWith(promise: Promise<unknown>, kind: RegistryError['kind'], message?: RegExp): Promise<RegistryError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof RegistryError, `expected RegistryError, got ${String(err)}`);
    assert.equal(err.kind, kind, err.message);
    if (message) assert.match(err.message, message);
    return err;
  }
  assert.fail(`expected a '${kind}' RegistryError`);
}
