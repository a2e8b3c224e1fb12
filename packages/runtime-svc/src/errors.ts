import { status } from '@grpc/grpc-js';
import { StatusError, CommandTimeoutError } from '@skiff/common';
import { InvalidReferenceError, StoreError } from '@skiff/image-store';
import { CniConfigError } from './cni/config.js';
import { CapabilityError } from './oci/capabilities.js';
import { DeviceError } from './oci/devices.js';
import { SeccompProfileError } from './oci/seccomp-localhost.js';
import { SpecError } from './oci/spec-builder.js';
import { StopTimeoutError } from './oci/stop-container.js';
import { ProfileError } from './container/security-profiles.js';
import { UserResolutionError } from './container/user.js';
import { ContainerFileError } from './container/secure-path.js';
import { CdiError } from './cdi/cdi-spec.js';
import { KernelSupportError } from './mounts/native-helpers.js';

const INVALID_REQUEST = [SpecError, CapabilityError, DeviceError, SeccompProfileError, ProfileError, UserResolutionError, ContainerFileError, CdiError, InvalidReferenceError];

/** Gives every failure the gRPC status the kubelet (and an operator reading it) can act on. */
export function toStatusError(err: unknown, signal?: AbortSignal): StatusError {
  if (err instanceof StatusError) return err;
  const message = err instanceof Error ? err.message : String(err);
  if (INVALID_REQUEST.some((kind) => err instanceof kind)) return new StatusError(status.INVALID_ARGUMENT, message);
  if (err instanceof StoreError) return new StatusError(err.kind === 'not-found' ? status.NOT_FOUND : status.FAILED_PRECONDITION, message);
  if (err instanceof StopTimeoutError || err instanceof CommandTimeoutError) return new StatusError(status.DEADLINE_EXCEEDED, message);
  if (err instanceof CniConfigError || err instanceof KernelSupportError) return new StatusError(status.FAILED_PRECONDITION, message);
  if (signal?.aborted) return new StatusError(status.CANCELLED, `the call was cancelled by the client (${message})`);
  return new StatusError(status.INTERNAL, message);
}
