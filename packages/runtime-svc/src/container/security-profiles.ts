import type { cri } from '@skiff/proto';
import { loadSeccompProfile } from '../oci/seccomp-localhost.js';
import type { ApparmorInput, SeccompInput } from '../oci/spec-builder.js';

export class ProfileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProfileError';
  }
}

/**
 * The seccomp profile asked for: the SecurityProfile field, else the deprecated path form
 * ("runtime/default", "docker/default", "unconfined", "localhost/<file>"). Nothing asked means
 * unconfined, as CRI defines it.
 */
export async function seccompFor(profile: cri.SecurityProfile__Output | null, deprecatedPath: string): Promise<SeccompInput> {
  if (profile) {
    switch (profile.profile_type) {
      case 'RuntimeDefault':
        return { kind: 'runtime-default' };
      case 'Unconfined':
        return { kind: 'unconfined' };
      case 'Localhost':
        if (!profile.localhost_ref) throw new ProfileError('seccomp profile type Localhost needs localhost_ref (the profile file)');
        return { kind: 'localhost', profile: await loadSeccompProfile(profile.localhost_ref) };
    }
  }
  if (!deprecatedPath || deprecatedPath === 'unconfined') return { kind: 'unconfined' };
  if (deprecatedPath === 'runtime/default' || deprecatedPath === 'docker/default') return { kind: 'runtime-default' };
  if (deprecatedPath.startsWith('localhost/')) return { kind: 'localhost', profile: await loadSeccompProfile(deprecatedPath.slice('localhost'.length)) };
  throw new ProfileError(`unknown seccomp profile "${deprecatedPath}"`);
}

/** The AppArmor profile asked for, in the same two forms; nothing asked means the runtime default. */
export function apparmorFor(profile: cri.SecurityProfile__Output | null, deprecatedName: string): ApparmorInput {
  if (profile) {
    switch (profile.profile_type) {
      case 'RuntimeDefault':
        return { kind: 'runtime-default' };
      case 'Unconfined':
        return { kind: 'unconfined' };
      case 'Localhost':
        if (!profile.localhost_ref) throw new ProfileError('AppArmor profile type Localhost needs localhost_ref (the profile name)');
        return { kind: 'localhost', name: profile.localhost_ref };
    }
  }
  if (!deprecatedName || deprecatedName === 'runtime/default') return { kind: 'runtime-default' };
  if (deprecatedName === 'unconfined') return { kind: 'unconfined' };
  if (deprecatedName.startsWith('localhost/')) return { kind: 'localhost', name: deprecatedName.slice('localhost/'.length) };
  throw new ProfileError(`unknown AppArmor profile "${deprecatedName}"`);
}
