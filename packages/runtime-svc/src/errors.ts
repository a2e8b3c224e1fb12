import { status } from '@grpc/grpc-js';
import { CommandTimeoutError, statusForFailure, type StatusError } from '@skiff/common';
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

function knownStatus(err: unknown): status | undefined {
  if (INVALID_REQUEST.some((kind) => err instanceof kind)) return status.INVALID_ARGUMENT;
  if (err instanceof StoreError) return err.kind === 'not-found' ? status.NOT_FOUND : status.FAILED_PRECONDITION;
  if (err instanceof StopTimeoutError || err instanceof CommandTimeoutError) return status.DEADLINE_EXCEEDED;
  if (err instanceof CniConfigError || err instanceof KernelSupportError) return status.FAILED_PRECONDITION;
  return undefined;
}

/** Gives every failure the gRPC status the kubelet (and an operator reading it) can act on. */
export function toStatusError(err: unknown, signal?: AbortSignal): StatusError {
  return statusForFailure(err, signal, knownStatus, (message) => `the call was cancelled by the client (${message})`);
}
