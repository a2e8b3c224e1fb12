/**
 * Awaits every piece of work and returns their results; if any failed, the first failure, but
 * only once all have settled, so no step is still running when the caller cleans up after it.
 */
export async function allSettledOrThrow<T extends readonly unknown[]>(work: T): Promise<{ -readonly [K in keyof T]: Awaited<T[K]> }> {
  const settled = await Promise.allSettled(work);
  for (const result of settled) if (result.status === 'rejected') throw result.reason;
  return settled.map((r) => (r as PromiseFulfilledResult<unknown>).value) as { -readonly [K in keyof T]: Awaited<T[K]> };
}
