import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Server, ServerCredentials, status, type ServiceError } from '@grpc/grpc-js';
import {
  CHANNEL_OPTIONS,
  PROTO_PATH,
  callUnary,
  createImageClient,
  createRuntimeClient,
  imageServiceDefinition,
  loadCri,
  runtimeServiceDefinition,
  type cri,
} from './index.js';

// Keys of an interface minus the string index signature grpc-js base types add.
type DeclaredKeys<T> = keyof { [K in keyof T as string extends K ? never : K]: T[K] };
type SameKeys<A, B> = [DeclaredKeys<A>] extends [DeclaredKeys<B>]
  ? [DeclaredKeys<B>] extends [DeclaredKeys<A>]
    ? true
    : false
  : false;

// Compile-time: the handler and definition interfaces agree on method names.
const runtimeInterfacesAgree: SameKeys<cri.RuntimeServiceHandlers, cri.RuntimeServiceDefinition> = true;
const imageInterfacesAgree: SameKeys<cri.ImageServiceHandlers, cri.ImageServiceDefinition> = true;

// Object literals typed by the handler keys: the compiler rejects both missing
// and extra names, so Object.keys of these is exactly the interface's method set.
const runtimeHandlerNames: Record<DeclaredKeys<cri.RuntimeServiceHandlers>, true> = {
  Version: true,
  RunPodSandbox: true,
  StopPodSandbox: true,
  RemovePodSandbox: true,
  PodSandboxStatus: true,
  ListPodSandbox: true,
  StreamPodSandboxes: true,
  CreateContainer: true,
  StartContainer: true,
  StopContainer: true,
  RemoveContainer: true,
  ListContainers: true,
  StreamContainers: true,
  ContainerStatus: true,
  UpdateContainerResources: true,
  ReopenContainerLog: true,
  ExecSync: true,
  Exec: true,
  Attach: true,
  PortForward: true,
  ContainerStats: true,
  ListContainerStats: true,
  StreamContainerStats: true,
  PodSandboxStats: true,
  ListPodSandboxStats: true,
  StreamPodSandboxStats: true,
  UpdateRuntimeConfig: true,
  Status: true,
  CheckpointContainer: true,
  CheckpointPod: true,
  RestorePod: true,
  GetContainerEvents: true,
  ListMetricDescriptors: true,
  ListPodSandboxMetrics: true,
  StreamPodSandboxMetrics: true,
  RuntimeConfig: true,
  UpdatePodSandboxResources: true,
};

const imageHandlerNames: Record<DeclaredKeys<cri.ImageServiceHandlers>, true> = {
  ListImages: true,
  StreamImages: true,
  ImageStatus: true,
  PullImage: true,
  RemoveImage: true,
  ImageFsInfo: true,
};

// What the kubelet of Kubernetes 1.32 calls.
const KUBERNETES_1_32_RUNTIME_RPCS = [
  'Version', 'RunPodSandbox', 'StopPodSandbox', 'RemovePodSandbox', 'PodSandboxStatus',
  'ListPodSandbox', 'CreateContainer', 'StartContainer', 'StopContainer', 'RemoveContainer',
  'ListContainers', 'ContainerStatus', 'UpdateContainerResources', 'ReopenContainerLog',
  'ExecSync', 'Exec', 'Attach', 'PortForward', 'ContainerStats', 'ListContainerStats',
  'PodSandboxStats', 'ListPodSandboxStats', 'UpdateRuntimeConfig', 'Status',
  'CheckpointContainer', 'GetContainerEvents', 'ListMetricDescriptors',
  'ListPodSandboxMetrics', 'RuntimeConfig',
];
const KUBERNETES_1_32_IMAGE_RPCS = ['ListImages', 'ImageStatus', 'PullImage', 'RemoveImage', 'ImageFsInfo'];

/** rpc names per service, read from the .proto text itself. */
async function rpcNamesFromProto(): Promise<Map<string, string[]>> {
  const text = (await readFile(PROTO_PATH, 'utf8')).replace(/\/\/[^\n]*/g, '');
  const services = new Map<string, string[]>();
  for (const match of text.matchAll(/\bservice\s+(\w+)\s*\{([\s\S]*?)\n\}/g)) {
    const [, name, body] = match;
    assert.ok(name !== undefined && body !== undefined);
    services.set(name, [...body.matchAll(/\brpc\s+(\w+)\s*\(/g)].map((rpc) => rpc[1] ?? ''));
  }
  return services;
}

const sorted = (names: Iterable<string>): string[] => [...names].sort();

test('api.proto declares exactly RuntimeService and ImageService', async () => {
  const services = await rpcNamesFromProto();
  assert.deepEqual(sorted(services.keys()), ['ImageService', 'RuntimeService']);
});

test('generated definitions and handler interfaces list exactly the rpcs of api.proto', async () => {
  assert.equal(runtimeInterfacesAgree, true);
  assert.equal(imageInterfacesAgree, true);
  const services = await rpcNamesFromProto();
  const runtimeRpcs = sorted(services.get('RuntimeService') ?? []);
  const imageRpcs = sorted(services.get('ImageService') ?? []);

  assert.deepEqual(sorted(Object.keys(runtimeServiceDefinition)), runtimeRpcs);
  assert.deepEqual(sorted(Object.keys(loadCri().RuntimeService.service)), runtimeRpcs);
  assert.deepEqual(sorted(Object.keys(runtimeHandlerNames)), runtimeRpcs);

  assert.deepEqual(sorted(Object.keys(imageServiceDefinition)), imageRpcs);
  assert.deepEqual(sorted(Object.keys(loadCri().ImageService.service)), imageRpcs);
  assert.deepEqual(sorted(Object.keys(imageHandlerNames)), imageRpcs);
});

test('every rpc the Kubernetes 1.32 kubelet uses is present', async () => {
  const services = await rpcNamesFromProto();
  const runtimeRpcs = new Set(services.get('RuntimeService'));
  const imageRpcs = new Set(services.get('ImageService'));
  assert.equal(KUBERNETES_1_32_RUNTIME_RPCS.length, 29);
  for (const rpc of KUBERNETES_1_32_RUNTIME_RPCS) assert.ok(runtimeRpcs.has(rpc), `RuntimeService.${rpc}`);
  for (const rpc of KUBERNETES_1_32_IMAGE_RPCS) assert.ok(imageRpcs.has(rpc), `ImageService.${rpc}`);
});

test('service paths use the runtime.v1 package', () => {
  assert.equal(runtimeServiceDefinition.Version.path, '/runtime.v1.RuntimeService/Version');
  assert.equal(imageServiceDefinition.PullImage.path, '/runtime.v1.ImageService/PullImage');
  assert.equal(runtimeServiceDefinition.GetContainerEvents.responseStream, true);
});

test('decoding follows the loader options the types were generated for', () => {
  const method = runtimeServiceDefinition.ContainerStatus;
  const wire = method.responseSerialize({
    status: { state: 'CONTAINER_EXITED', created_at: '1800000000000000123', exit_code: 137 },
  });
  const decoded: cri.ContainerStatusResponse__Output = method.responseDeserialize(wire);
  assert.ok(decoded.status);
  // enums as strings, int64 as exact decimal strings, snake_case field names
  assert.equal(decoded.status.state, 'CONTAINER_EXITED');
  assert.equal(decoded.status.created_at, '1800000000000000123');
  assert.equal(decoded.status.exit_code, 137);
  // defaults for absent fields
  assert.equal(decoded.status.id, '');
  assert.equal(decoded.status.started_at, '0');
  assert.deepEqual(decoded.status.labels, {});
  assert.deepEqual(decoded.status.mounts, []);
  assert.deepEqual(decoded.info, {});
});

test('requests encode to the CRI wire format: packed repeated scalars, oneof fields, enums by name or number', () => {
  const method = runtimeServiceDefinition.CreateContainer;
  const wire = method.requestSerialize({
    pod_sandbox_id: 'p',
    config: { linux: { security_context: { supplemental_groups: ['1', '2'], namespace_options: { pid: 'CONTAINER', ipc: 2 } } } },
  });
  // CreateContainerRequest.config (2) > ContainerConfig.linux (15) > LinuxContainerConfig.security_context (2):
  // namespace_options (3) with pid (2) CONTAINER = 1 and ipc (3) = 2, then supplemental_groups (8) packed:
  // one length-delimited field holding two varints.
  assert.deepEqual(
    [...wire],
    [0x0a, 0x01, 0x70, 0x12, 0x0e, 0x7a, 0x0c, 0x12, 0x0a, 0x1a, 0x04, 0x10, 0x01, 0x18, 0x02, 0x42, 0x02, 0x01, 0x02],
  );
  const decoded = method.requestDeserialize(wire);
  assert.deepEqual(decoded.config?.linux?.security_context?.supplemental_groups, ['1', '2']);
  assert.equal(decoded.config?.linux?.security_context?.namespace_options?.ipc, 'NODE');
  assert.throws(() => method.requestSerialize([] as unknown as cri.CreateContainerRequest), /array/);
});

test('unix socket round trip through the generated clients', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'skiff-proto-'));
  const socketPath = join(dir, 'cri.sock');
  const timestamp = '1800000000000000123'; // beyond 2^53: would be rounded as a double
  const usedBytes = '18446744073709551615'; // largest uint64

  let seenVersionRequest: cri.VersionRequest__Output | undefined;
  const runtimeHandlers: Pick<cri.RuntimeServiceHandlers, 'Version'> = {
    Version(callObj, callback) {
      seenVersionRequest = callObj.request;
      callback(null, { version: '0.1.0', runtime_name: 'skiff', runtime_version: '0.1.0', runtime_api_version: 'v1' });
    },
  };
  const imageHandlers: Pick<cri.ImageServiceHandlers, 'ImageFsInfo' | 'ImageStatus'> = {
    ImageFsInfo(_callObj, callback) {
      callback(null, {
        image_filesystems: [
          { timestamp, fs_id: { mountpoint: '/var/lib/skiff' }, used_bytes: { value: usedBytes }, inodes_used: { value: '42' } },
        ],
      });
    },
    ImageStatus(_callObj, callback) {
      callback({ code: status.NOT_FOUND, details: 'no such image' });
    },
  };

  const server = new Server(CHANNEL_OPTIONS);
  server.addService(runtimeServiceDefinition, runtimeHandlers);
  server.addService(imageServiceDefinition, imageHandlers);
  await new Promise<void>((resolve, reject) => {
    server.bindAsync(`unix:${socketPath}`, ServerCredentials.createInsecure(), (error) => (error ? reject(error) : resolve()));
  });

  const runtimeClient = createRuntimeClient(socketPath);
  const imageClient = createImageClient(socketPath);
  t.after(async () => {
    runtimeClient.close();
    imageClient.close();
    await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
    await rm(dir, { recursive: true, force: true });
  });

  const version = await callUnary(runtimeClient, 'Version', { version: '0.1.0' }, { timeoutMs: 5000 });
  assert.equal(version.runtime_name, 'skiff');
  assert.equal(version.runtime_api_version, 'v1');
  assert.equal(seenVersionRequest?.version, '0.1.0');

  const fsInfo = await callUnary(imageClient, 'ImageFsInfo', {}, { timeoutMs: 5000 });
  assert.equal(fsInfo.image_filesystems.length, 1);
  const [usage] = fsInfo.image_filesystems;
  assert.equal(usage?.timestamp, timestamp);
  assert.equal(usage?.fs_id?.mountpoint, '/var/lib/skiff');
  assert.equal(usage?.used_bytes?.value, usedBytes);
  assert.equal(usage?.inodes_used?.value, '42');
  assert.deepEqual(fsInfo.container_filesystems, []);

  await assert.rejects(
    callUnary(imageClient, 'ImageStatus', { image: { image: 'missing:latest' } }, { timeoutMs: 5000 }),
    (error: ServiceError) => error.code === status.NOT_FOUND && error.details === 'no such image',
  );

  // Methods the server does not implement fail cleanly instead of hanging.
  await assert.rejects(
    callUnary(imageClient, 'ListImages', {}, { timeoutMs: 5000 }),
    (error: ServiceError) => error.code === status.UNIMPLEMENTED,
  );

  const aborted = new AbortController();
  aborted.abort();
  await assert.rejects(
    callUnary(runtimeClient, 'Version', {}, { signal: aborted.signal }),
    (error: ServiceError) => error.code === status.CANCELLED,
  );
});

test('an expired deadline rejects with DEADLINE_EXCEEDED', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'skiff-proto-'));
  const socketPath = join(dir, 'cri.sock');
  const server = new Server(CHANNEL_OPTIONS);
  const imageHandlers: Pick<cri.ImageServiceHandlers, 'ImageFsInfo'> = {
    ImageFsInfo(_callObj, callback) {
      setTimeout(() => callback(null, {}), 500);
    },
  };
  server.addService(imageServiceDefinition, imageHandlers);
  await new Promise<void>((resolve, reject) => {
    server.bindAsync(`unix:${socketPath}`, ServerCredentials.createInsecure(), (error) => (error ? reject(error) : resolve()));
  });
  const client = createImageClient(`unix:${socketPath}`);
  t.after(async () => {
    client.close();
    server.forceShutdown();
    await rm(dir, { recursive: true, force: true });
  });

  await assert.rejects(
    callUnary(client, 'ImageFsInfo', {}, { timeoutMs: 50 }),
    (error: ServiceError) => error.code === status.DEADLINE_EXCEEDED,
  );
});
