export type RegistryErrorKind =
  | 'not-found'
  | 'unauthorized'
  | 'denied'
  | 'blocked'
  | 'unsupported-media-type'
  | 'unreachable'
  | 'invalid-manifest'
  | 'digest-mismatch'
  | 'too-large'
  | 'protocol'
  /** An HTTPS request redirected to plain HTTP. */
  | 'insecure-redirect';

/** What one endpoint answered while a pull fell through mirrors to the origin. */
export interface EndpointFailure {
  endpoint: string;
  kind: RegistryErrorKind;
  message: string;
}

export class RegistryError extends Error {
  /** For a pull that tried several endpoints: each one's failure, in the order tried. */
  readonly attempts: EndpointFailure[];

  constructor(
    readonly kind: RegistryErrorKind,
    message: string,
    options?: { cause?: unknown; attempts?: EndpointFailure[] },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'RegistryError';
    this.attempts = options?.attempts ?? [];
  }
}

export function isRegistryError(err: unknown, kind?: RegistryErrorKind): err is RegistryError {
  return err instanceof RegistryError && (kind === undefined || err.kind === kind);
}
