export { TestDaemon, type TestDaemonOptions } from './test-daemon.js';
export { addBusyboxImage } from './test-image.js';
export { makeBusyboxRootfs, busyboxEchoServer } from './busybox-rootfs.js';
export { podConfig, containerConfig, env, rejectsWith, exists, allocatedIps } from './cri-fixtures.js';
export { uniqueName, uniqueContainerId, removeCgroupEverywhere, cgroupExistsAnywhere, isRoot } from './test-env.js';
export { mountsUnder, unmountAllUnder, deleteRuncContainers } from './host-cleanup.js';
export { workspacePath } from './workspace.js';
export { eventually } from './eventually.js';
