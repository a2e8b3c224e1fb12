import { status } from '@grpc/grpc-js';
import { statusForFailure, type StatusError } from '@skiff/common';
import { InvalidReferenceError } from '@skiff/reference';
import { RegistryError } from '@skiff/registry';
import { StoreError } from '@skiff/image-store';

const REGISTRY_CODES: Record<RegistryError['kind'], status> = {
  'not-found': status.NOT_FOUND,
  unauthorized: status.UNAUTHENTICATED,
  denied: status.PERMISSION_DENIED,
  blocked: status.FAILED_PRECONDITION,
  'unsupported-media-type': status.FAILED_PRECONDITION,
  unreachable: status.UNAVAILABLE,
  'invalid-manifest': status.FAILED_PRECONDITION,
  'digest-mismatch': status.FAILED_PRECONDITION,
  'too-large': status.FAILED_PRECONDITION,
  protocol: status.UNAVAILABLE,
  'insecure-redirect': status.FAILED_PRECONDITION,
};

const STORE_CODES: Record<StoreError['kind'], status> = {
  'not-found': status.NOT_FOUND,
  'digest-mismatch': status.FAILED_PRECONDITION,
  'size-mismatch': status.FAILED_PRECONDITION,
  'unsafe-path': status.FAILED_PRECONDITION,
  'bad-layer': status.FAILED_PRECONDITION,
  locked: status.FAILED_PRECONDITION,
  unsupported: status.FAILED_PRECONDITION,
  'limit-exceeded': status.RESOURCE_EXHAUSTED,
};

function knownStatus(err: unknown): status | undefined {
  if (err instanceof InvalidReferenceError) return status.INVALID_ARGUMENT;
  if (err instanceof RegistryError) return REGISTRY_CODES[err.kind];
  if (err instanceof StoreError) return STORE_CODES[err.kind];
  return undefined;
}

/** Gives every failure of the image path the gRPC status an operator (and the kubelet) can act on. */
export function toStatusError(err: unknown, signal?: AbortSignal): StatusError {
  return statusForFailure(err, signal, knownStatus, () => 'the pull was cancelled by the client');
}
