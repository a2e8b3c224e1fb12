import { promises as fs } from 'node:fs';
import type { Seccomp } from './runtime-spec.js';

export class SeccompProfileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SeccompProfileError';
  }
}

/**
 * Reads a Localhost seccomp profile: a JSON file in the runtime-spec's linux.seccomp shape
 * (Docker-format profiles use the same field names for the parts runc understands).
 */
export async function loadSeccompProfile(path: string): Promise<Seccomp> {
  if (!path.startsWith('/')) throw new SeccompProfileError(`seccomp profile path "${path}" must be absolute`);
  let text: string;
  try {
    text = await fs.readFile(path, 'utf8');
  } catch (err) {
    throw new SeccompProfileError(`cannot read seccomp profile ${path}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new SeccompProfileError(`seccomp profile ${path} is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || typeof (parsed as { defaultAction?: unknown }).defaultAction !== 'string') {
    throw new SeccompProfileError(`seccomp profile ${path} has no "defaultAction"`);
  }
  const profile = parsed as Seccomp & { archMap?: { architecture: string; subArchitectures?: string[] }[] };
  const syscalls = profile.syscalls ?? [];
  if (!Array.isArray(syscalls) || syscalls.some((s) => !Array.isArray(s.names) || typeof s.action !== 'string')) {
    throw new SeccompProfileError(`seccomp profile ${path}: every "syscalls" entry needs "names" (a list) and "action"`);
  }
  const out: Seccomp = { defaultAction: profile.defaultAction, syscalls };
  if (profile.defaultErrnoRet !== undefined) out.defaultErrnoRet = profile.defaultErrnoRet;
  if (profile.architectures) out.architectures = profile.architectures;
  else if (Array.isArray(profile.archMap)) {
    out.architectures = profile.archMap.flatMap((a) => [a.architecture, ...(a.subArchitectures ?? [])]);
  }
  if (profile.flags) out.flags = profile.flags;
  return out;
}
