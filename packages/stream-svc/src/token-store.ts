import { randomBytes } from 'node:crypto';
import type { StreamRequest } from '@skiff/common/core';

export const TOKEN_TTL_MS = 60_000;
export const MAX_OUTSTANDING_TOKENS = 1000;

export class TooManyTokens extends Error {}

/** Single-use tokens for registered requests, each valid for a minute. */
export class TokenStore {
  private readonly entries = new Map<string, { request: StreamRequest; expires: number }>();

  constructor(
    private readonly ttlMs = TOKEN_TTL_MS,
    private readonly max = MAX_OUTSTANDING_TOKENS,
    private readonly now: () => number = Date.now,
  ) {}

  issue(request: StreamRequest): string {
    this.prune();
    if (this.entries.size >= this.max) {
      throw new TooManyTokens(`${this.max} streaming requests are waiting for their client; try again once some are used or expired (after ${this.ttlMs / 1000} s)`);
    }
    const token = randomBytes(16).toString('base64url');
    this.entries.set(token, { request, expires: this.now() + this.ttlMs });
    return token;
  }

  /** The request for `token`, which is used up; undefined if unknown or expired. */
  take(token: string): StreamRequest | undefined {
    const entry = this.entries.get(token);
    if (!entry) return undefined;
    this.entries.delete(token);
    return entry.expires > this.now() ? entry.request : undefined;
  }

  get size(): number {
    this.prune();
    return this.entries.size;
  }

  private prune(): void {
    const now = this.now();
    for (const [token, entry] of this.entries) if (entry.expires <= now) this.entries.delete(token);
  }
}
