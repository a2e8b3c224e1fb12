import type { StreamOutcome } from './session.js';

/** The metav1.Status the v4 and v5 protocols send on the error channel when a command ends. */
export function statusFor(outcome: StreamOutcome, cmd: string[]): Record<string, unknown> {
  const base = { kind: 'Status', apiVersion: 'v1', metadata: {} };
  if ('error' in outcome) return { ...base, status: 'Failure', message: outcome.error };
  if (outcome.exitCode === 0) return { ...base, status: 'Success' };
  return {
    ...base,
    status: 'Failure',
    message: `command terminated with non-zero exit code: error executing command ${JSON.stringify(cmd)}, exit code ${outcome.exitCode}`,
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(outcome.exitCode) }] },
  };
}

/** The plain-text error older protocols send; nothing on success. */
export function legacyErrorFor(outcome: StreamOutcome, cmd: string[]): string | undefined {
  if ('error' in outcome) return outcome.error;
  if (outcome.exitCode === 0) return undefined;
  return `command terminated with non-zero exit code: error executing command ${JSON.stringify(cmd)}, exit code ${outcome.exitCode}`;
}
