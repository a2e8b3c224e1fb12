import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_CAPABILITIES } from './capabilities.js';
import { runtimeDefaultSeccompProfile } from './seccomp-default.js';

/** The syscalls the profile allows whatever their arguments. */
function allowedSyscalls(capabilities: readonly string[]): Set<string> {
  const profile = runtimeDefaultSeccompProfile(capabilities);
  return new Set(profile.syscalls?.filter((s) => s.action === 'SCMP_ACT_ALLOW' && !s.args).flatMap((s) => s.names));
}

describe('RuntimeDefault seccomp profile', () => {
  it('allows the ptrace family, pidfd_getfd included, only with CAP_SYS_PTRACE', () => {
    const ptraceFamily = ['kcmp', 'pidfd_getfd', 'process_madvise', 'process_vm_readv', 'process_vm_writev', 'ptrace'];
    const withoutPtrace = allowedSyscalls(DEFAULT_CAPABILITIES);
    for (const name of ptraceFamily) assert.equal(withoutPtrace.has(name), false, `${name} without CAP_SYS_PTRACE`);
    const withPtrace = allowedSyscalls([...DEFAULT_CAPABILITIES, 'CAP_SYS_PTRACE']);
    for (const name of ptraceFamily) assert.equal(withPtrace.has(name), true, `${name} with CAP_SYS_PTRACE`);
  });

  it('keeps the pidfd calls that need no capability', () => {
    const allowed = allowedSyscalls(DEFAULT_CAPABILITIES);
    assert.ok(allowed.has('pidfd_open'));
    assert.ok(allowed.has('pidfd_send_signal'));
  });
});
