/** A content digest "algorithm:encoded", e.g. "sha256:<64 hex>". */
export const DIGEST_PATTERN = /^(sha256|sha384|sha512):([a-f0-9]+)$/;

const HEX_LENGTH: Record<string, number> = { sha256: 64, sha384: 96, sha512: 128 };

export interface ParsedDigest {
  algorithm: 'sha256' | 'sha384' | 'sha512';
  hex: string;
}

export function parseDigest(value: string): ParsedDigest | undefined {
  const m = DIGEST_PATTERN.exec(value);
  if (!m) return undefined;
  const algorithm = m[1] as ParsedDigest['algorithm'];
  const hex = m[2]!;
  if (hex.length !== HEX_LENGTH[algorithm]) return undefined;
  return { algorithm, hex };
}

export function isDigest(value: string): boolean {
  return parseDigest(value) !== undefined;
}

/** An image id is the digest of its config; operators may also give the bare 64-hex form. */
export function isImageId(value: string): boolean {
  return /^(sha256:)?[a-f0-9]{64}$/.test(value);
}

export function toImageId(value: string): string {
  return value.startsWith('sha256:') ? value : `sha256:${value}`;
}
