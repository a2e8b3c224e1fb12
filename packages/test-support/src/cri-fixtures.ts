import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { status } from '@grpc/grpc-js';
import type { cri } from '@skiff/proto';

let counter = 0;

/** A pod sandbox config with a unique name; `overrides` replace top-level fields. */
export function podConfig(logDirectory: string, overrides: Partial<cri.PodSandboxConfig> = {}): cri.PodSandboxConfig {
  counter++;
  return {
    metadata: { name: `pod-${process.pid}-${counter}`, namespace: 'skiff-test', uid: `uid-${process.pid}-${counter}`, attempt: 0 },
    hostname: `pod-${counter}`,
    log_directory: logDirectory,
    labels: { suite: 'skiff', n: String(counter) },
    annotations: { 'skiff.test/annotation': `value-${counter}` },
    ...overrides,
  };
}

export function containerConfig(name: string, image: string, overrides: Partial<cri.ContainerConfig> = {}): cri.ContainerConfig {
  return { metadata: { name, attempt: 0 }, image: { image }, log_path: `${name}/0.log`, ...overrides };
}

export function env(values: Record<string, string>): cri.KeyValue[] {
  return Object.entries(values).map(([key, value]) => ({ key, value: Buffer.from(value) }));
}

/** Asserts a rejected call carried `code` and a message matching `message`. */
export async function rejectsWith(promise: Promise<unknown>, code: status, message?: RegExp): Promise<void> {
  await assert.rejects(promise, (err: { code?: number; details?: string }) => {
    assert.equal(err.code, code, `expected gRPC status ${status[code]}, got ${err.code !== undefined ? status[err.code] : 'none'}: ${err.details}`);
    if (message) assert.match(err.details ?? '', message);
    return true;
  });
}

export async function exists(path: string): Promise<boolean> {
  return fs.access(path).then(
    () => true,
    () => false,
  );
}

/** Addresses host-local still holds in its data directory. */
export async function allocatedIps(ipamDir: string): Promise<string[]> {
  const names = await fs.readdir(ipamDir).catch(() => [] as string[]);
  return names.filter((n) => /^\d+\.\d+\.\d+\.\d+$/.test(n));
}
