import { SingleFlight } from '@skiff/common';

export const DEFAULT_TOKEN_LIFETIME_SECONDS = 60;
const MAX_ENTRIES = 1000;

export interface IssuedToken {
  token: string;
  /** As the token server said; missing or invalid means DEFAULT_TOKEN_LIFETIME_SECONDS. */
  expiresInSeconds?: number;
}

/** Keeps refresh well ahead of expiry: 10% of the lifetime, at least 5 s and at most 30 s. */
export function tokenReuseMillis(expiresInSeconds: number | undefined): number {
  const lifetime =
    expiresInSeconds !== undefined && Number.isFinite(expiresInSeconds) && expiresInSeconds > 0
      ? expiresInSeconds
      : DEFAULT_TOKEN_LIFETIME_SECONDS;
  const margin = Math.min(30, Math.max(5, lifetime / 10));
  return Math.max(0, (lifetime - margin) * 1000);
}

/**
 * Bearer tokens by (realm, service, scopes, credentials), reused until shortly before they expire.
 * Concurrent requests for the same key share one fetch, so the layers of one pull cost one token request.
 */
export class TokenCache {
  private readonly entries = new Map<string, { token: string; validUntil: number }>();
  private readonly fetches = new SingleFlight<string>();

  constructor(private readonly now: () => number = Date.now) {}

  get(key: string): string | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.validUntil <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.token;
  }

  set(key: string, issued: IssuedToken): void {
    const reuse = tokenReuseMillis(issued.expiresInSeconds);
    if (reuse <= 0) return;
    if (this.entries.size >= MAX_ENTRIES) this.prune();
    this.entries.set(key, { token: issued.token, validUntil: this.now() + reuse });
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  /** The cached token, or the result of `fetch` (shared with concurrent callers of the same key). */
  async getOrFetch(key: string, fetch: () => Promise<IssuedToken>): Promise<string> {
    const cached = this.get(key);
    if (cached !== undefined) return cached;
    return this.fetches.run(key, async () => {
      const issued = await fetch();
      this.set(key, issued);
      return issued.token;
    });
  }

  get size(): number {
    return this.entries.size;
  }

  private prune(): void {
    const now = this.now();
    for (const [key, entry] of this.entries) if (entry.validUntil <= now) this.entries.delete(key);
    // Still full of live tokens: drop the oldest insertions.
    for (const key of this.entries.keys()) {
      if (this.entries.size < MAX_ENTRIES) break;
      this.entries.delete(key);
    }
  }
}
