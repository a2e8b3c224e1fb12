// The e2e harness as other workspace packages (the benchmarks) use it: '@skiff/e2e/lib'.
export { startRuntimeHarness, removeCgroupTree, type Pod, type RuntimeHarness, type RuntimeHarnessOptions } from './runtime-harness.js';
export { listConmonProcesses } from './runtime-inventory.js';
export { makeTempDir, removeDir } from './tmp.js';
export { openWebSocket, wsExec, type WsExecResult } from './stream-client.js';
export { startRegistry, type Registry, type RegistryOptions } from './registry.js';
export { pushTestImage, getTestImage, imageCacheDir, type PushedImage, type TestImageName } from './image-catalogue.js';
export { buildImage, type BuildImageOptions, type Image } from './oci-image.js';
export { pushImage, type PushOptions } from './push.js';
export { RegistryClient } from './registry-client.js';
export { startSkiff, type SkiffInstance, type SkiffOptions } from './skiff-instance.js';
export { buildLayer } from './layer-builder.js';
export { getFreePort } from './free-port.js';
export { nriPluginBinary, startNriPlugin, type NriPluginProcess } from './nri-plugins.js';
export { pseudoRandomStream } from './random-data.js';
export { startKubeNode, type KubeNode, type KubeNodeOptions } from './kube-node.js';
