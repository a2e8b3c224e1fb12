import { join } from 'node:path';

export interface SandboxPaths {
  dir: string;
  record: string;
  /** An empty file whose presence says the sandbox is being removed, whatever its record says. */
  removing: string;
  /** The OCI bundle of the sandbox container is the sandbox directory itself. */
  bundle: string;
  rootfs: string;
  spec: string;
  hostname: string;
  hosts: string;
  resolvConf: string;
  /** tmpfs mount point shared as the pod's /dev/shm. */
  shm: string;
  /** runc writes the pause process's pid here. */
  pidFile: string;
  /** A pod with its own user namespace: the namespace, bind-mounted here, which keeps it alive. */
  userns: string;
  /**
   * The IPC, UTS and PID namespaces the pause process made, bind-mounted here once it started
   * (pod-namespaces.ts): what the pod's containers join, never /proc/<pause pid>/ns/*.
   */
  ipcns: string;
  utsns: string;
  pidns: string;
}

export interface ContainerPaths {
  dir: string;
  record: string;
  /** An empty file whose presence says the container is being removed, whatever its record says. */
  removing: string;
  bundle: string;
  spec: string;
  rootfs: string;
  upper: string;
  work: string;
  persist: string;
  pidFile: string;
  conmonPidFile: string;
  /** Used only when a container has no CRI log file and no journal to write to. */
  fallbackLog: string;
  /** The CRI log path, written when CreateContainer is about to make the file: undoing the create removes it. */
  newLogFile: string;
  /** An empty file whose presence says StartContainer has begun launching the container: a restarted runtime-svc finishes the start. */
  starting: string;
}

/**
 * Where the runtime keeps things. Persistent (root): records, bundles, container layers, CNI
 * results. Volatile (run_dir): runc state, network namespaces, conmon exit files and sockets,
 * short enough for conmon's attach socket path (<run_dir>/attach/<64-hex id>/attach).
 */
export class RuntimePaths {
  readonly stateDir: string;
  readonly sandboxesDir: string;
  readonly containersDir: string;
  readonly runtimeConfigFile: string;
  readonly cniCacheDir: string;
  readonly exitDir: string;
  readonly attachDir: string;
  readonly netnsDir: string;
  readonly execDir: string;
  /** Who the running runtime service is (pid, process group, start time), for the next one's recovery. */
  readonly instanceFile: string;

  constructor(
    readonly root: string,
    readonly runDir: string,
  ) {
    this.stateDir = join(root, 'runtime');
    this.sandboxesDir = join(this.stateDir, 'sandboxes');
    this.containersDir = join(this.stateDir, 'containers');
    this.runtimeConfigFile = join(this.stateDir, 'network.json');
    this.cniCacheDir = join(root, 'cni', 'results');
    this.exitDir = join(runDir, 'exits');
    this.attachDir = join(runDir, 'attach');
    this.netnsDir = join(runDir, 'netns');
    this.execDir = join(runDir, 'exec');
    this.instanceFile = join(runDir, 'runtime-svc.instance.json');
  }

  /** runc --root of a runtime handler; the default handler's is <run_dir>/runc. */
  runcRoot(handler: string): string {
    return handler === '' ? join(this.runDir, 'runc') : join(this.runDir, 'runtimes', handler);
  }

  // `dir` comes out of join normalised, so appending a name gives what join would, without its
  // cost: the stats and status calls ask for these paths for every container they answer on.
  sandbox(id: string): SandboxPaths {
    const dir = join(this.sandboxesDir, id);
    return {
      dir,
      record: `${dir}/sandbox.json`,
      removing: `${dir}/removing`,
      bundle: dir,
      rootfs: `${dir}/rootfs`,
      spec: `${dir}/config.json`,
      hostname: `${dir}/hostname`,
      hosts: `${dir}/hosts`,
      resolvConf: `${dir}/resolv.conf`,
      shm: `${dir}/shm`,
      pidFile: `${dir}/pidfile`,
      userns: `${dir}/userns`,
      ipcns: `${dir}/ipcns`,
      utsns: `${dir}/utsns`,
      pidns: `${dir}/pidns`,
    };
  }

  container(id: string): ContainerPaths {
    const dir = join(this.containersDir, id);
    return {
      dir,
      record: `${dir}/container.json`,
      removing: `${dir}/removing`,
      bundle: dir,
      spec: `${dir}/config.json`,
      rootfs: `${dir}/rootfs`,
      upper: `${dir}/upper`,
      work: `${dir}/work`,
      persist: `${dir}/persist`,
      pidFile: `${dir}/pidfile`,
      conmonPidFile: `${dir}/conmon.pid`,
      fallbackLog: `${dir}/output.log`,
      newLogFile: `${dir}/new-log-file`,
      starting: `${dir}/starting`,
    };
  }
}
