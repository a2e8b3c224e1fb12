export type StoreErrorKind =
  | 'not-found'
  | 'digest-mismatch'
  | 'size-mismatch'
  | 'unsafe-path'
  | 'bad-layer'
  | 'locked'
  | 'unsupported'
  /** The layer went over an extraction limit or the store's free-space reserve. */
  | 'limit-exceeded';

export class StoreError extends Error {
  constructor(
    readonly kind: StoreErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StoreError';
  }
}

export function isStoreError(err: unknown, kind?: StoreErrorKind): err is StoreError {
  return err instanceof StoreError && (kind === undefined || err.kind === kind);
}
