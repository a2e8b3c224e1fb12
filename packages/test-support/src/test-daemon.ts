import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { bridgeNetworkConfig, chooseSubnet, hostRoutes, runCommand } from '@skiff/common';
import { callUnary, createRuntimeClient, type RuntimeServiceClient } from '@skiff/proto';
import { deleteRuncContainers, unmountAllUnder } from './host-cleanup.js';
import { removeCgroupEverywhere, uniqueName } from './test-env.js';
export interface TestDaemonOptions {
  /**
   * runtime-svc's built entry point (its package's `./main`), run as a process of its own as in
   * production. The caller names it: runtime-svc's own tests the file beside them, other
   * packages through their declared dependency on runtime-svc.
   */
  entry: string;
  /** Write a bridge network into the CNI configuration directory (else it starts empty). */
  network?: boolean;
  /** Extra lines for the [runtime] table. */
  runtimeToml?: string;
  /**
   * Run the daemon as on a host without journald: in a mount namespace of its own where
   * /run/systemd (journald's sockets) is an empty tmpfs and systemd-journald cannot be executed.
   */
  withoutJournald?: boolean;
}

/** What `withoutJournald` runs the daemon's command line under (argv after `unshare`). */
const WITHOUT_JOURNALD = [
  '--mount',
  '--propagation', 'private',
  '--',
  '/bin/sh', '-c', 'mount -t tmpfs -o mode=0755 tmpfs /run/systemd && mount --bind /dev/null /lib/systemd/systemd-journald && exec "$0" "$@"',
];

/**
 * The runtime daemon as a child process on a socket, root and run directory of its own, with a
 * bridge network, cgroup parent and subnet no other run uses; `cleanup` removes all of it.
 */
export class TestDaemon {
  readonly name = uniqueName('sk');
  readonly base: string;
  readonly root: string;
  /** Short: conmon's attach socket path (<run_dir>/attach/<id>/attach) must fit in 108 bytes. */
  readonly runDir = join('/run', `skt${this.name.slice(2, 10)}`);
  readonly socket = join(this.runDir, 'runtime.sock');
  readonly cniConfDir: string;
  readonly cgroupParent = `/skiff-test-${this.name}`;
  readonly bridge = `skt${this.name.slice(-9)}`;
  readonly configPath: string;
  subnet = '';
  client!: RuntimeServiceClient;
  child: ChildProcess | undefined;
  output: string[] = [];

  private constructor(
    base: string,
    private readonly entry: string,
    private readonly withoutJournald: boolean,
  ) {
    this.base = base;
    this.root = join(base, 'root');
    this.cniConfDir = join(base, 'cni');
    this.configPath = join(base, 'skiff.toml');
  }

  static async create(options: TestDaemonOptions): Promise<TestDaemon> {
    const d = new TestDaemon(await fs.mkdtemp(join(tmpdir(), 'skiff-rt-')), options.entry, options.withoutJournald ?? false);
    await fs.mkdir(d.cniConfDir, { recursive: true });
    if (options.network) await d.installNetwork();
    await fs.writeFile(
      d.configPath,
      [
        `root = "${d.root}"`,
        `run_dir = "${d.runDir}"`,
        'log_level = "debug"',
        '[runtime]',
        // Any free port: tests run beside each other and beside a Skiff the machine may run.
        'metrics_address = "127.0.0.1:0"',
        `socket = "${d.socket}"`,
        `cni_conf_dir = "${d.cniConfDir}"`,
        `cgroup_parent = "${d.cgroupParent}"`,
        options.runtimeToml ?? '',
      ].join('\n'),
    );
    return d;
  }

  /** A /24 clear of host routes and of other runs (and of `except`). */
  async freeSubnet(except: string[] = []): Promise<string> {
    const third = (process.pid + Math.floor(Math.random() * 50)) % 200;
    const candidates = [0, 1, 2, 3, 4].map((i) => `10.197.${(third + i * 50) % 250}.0/24`).filter((c) => !except.includes(c));
    const subnet = chooseSubnet(await hostRoutes(), candidates, this.bridge);
    if (!subnet) throw new Error('no free test subnet');
    return subnet;
  }

  /**
   * A bridge network on a subnet of its own. With `ipRanges`, the bridge plugin declares the
   * capability and host-local has no range of its own (it would use both): addresses then come
   * from the pod CIDR given to the runtime.
   */
  async installNetwork(options: { ipRanges?: boolean } = {}): Promise<void> {
    this.subnet = await this.freeSubnet();
    const net = bridgeNetworkConfig({ name: `net-${this.name}`, bridge: this.bridge, subnet: this.subnet, ipamDataDir: join(this.base, 'ipam') });
    if (options.ipRanges) {
      const bridge = net.plugins[0]!;
      bridge.capabilities = { ipRanges: true };
      delete (bridge['ipam'] as Record<string, unknown>)['ranges'];
    }
    await fs.writeFile(join(this.cniConfDir, '10-test.conflist'), JSON.stringify(net));
  }

  get ipamDir(): string {
    return join(this.base, 'ipam', `net-${this.name}`);
  }

  async start(): Promise<void> {
    const command = [process.execPath, this.entry, '--config', this.configPath];
    const child = spawn(this.withoutJournald ? 'unshare' : command[0]!, this.withoutJournald ? [...WITHOUT_JOURNALD, ...command] : command.slice(1), {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, SKIFF_SUPERVISED: '1' },
    });
    this.child = child;
    const collect = (chunk: Buffer): void => {
      this.output.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    this.client = createRuntimeClient(this.socket);
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`runtime daemon exited at start (${child.exitCode}):\n${this.output.join('\n')}`);
      try {
        await callUnary(this.client, 'Version', {}, { timeoutMs: 1000 });
        return;
      } catch {
        if (Date.now() > deadline) throw new Error(`runtime daemon did not answer within 30 s:\n${this.output.join('\n')}`);
        await sleep(100);
      }
    }
  }

  /** SIGTERM (orderly) or SIGKILL (a crash); waits for the process to end. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.child;
    this.client?.close();
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    await exited;
  }

  /** Lines the daemon logged, parsed. */
  logEntries(): Record<string, unknown>[] {
    return this.output.flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
  }

  /** Stops the daemon and removes everything it and the tests made. */
  async cleanup(): Promise<void> {
    if (this.child && this.child.exitCode === null) {
      try {
        const { items = [] } = await callUnary(this.client, 'ListPodSandbox', {}, { timeoutMs: 5000 });
        for (const item of items) await callUnary(this.client, 'RemovePodSandbox', { pod_sandbox_id: item.id }, { timeoutMs: 60_000 }).catch(() => undefined);
      } catch {
        // the daemon is not answering; remove things directly below
      }
    }
    await this.stop();
    await deleteRuncContainers(join(this.runDir, 'runc'));
    // Network namespace files, the namespace directory's own bind mount, container root filesystems.
    await unmountAllUnder(this.runDir, this.base);
    await runCommand('ip', ['link', 'del', this.bridge], { timeoutMs: 10_000 });
    await removeCgroupEverywhere(this.cgroupParent);
    await fs.rm(this.runDir, { recursive: true, force: true });
    await fs.rm(this.base, { recursive: true, force: true });
  }
}
