/**
 * Runs Skiff the way an operator does — `skiff up` in the foreground through the `skiff` command
 * (packages/skiff/bin/skiff, which the installed wrapper runs) — with a configuration of the
 * test's own: a temp root, run dir and registries.conf, so it never meets an operator's instance.
 *
 *   startSkiff({ registriesConf?, config?, imageConfig?, streamConfig?, logsConfig?, logLevel?, dir? }): Promise<SkiffInstance>
 *       answers once image-svc and runtime-svc both answer on their sockets
 *       config: extra keys of [runtime]; imageConfig, streamConfig, logsConfig, nriConfig: of [image], [stream], [logs], [nri]
 *       (the NRI socket is <runDir>/nri.sock, its plugin and configuration directories
 *       <dir>/nri-plugins and <dir>/nri-conf.d, unless nriConfig names others)
 *       dir: the directory of an earlier instance stopped with stop({ keepDir: true }); its
 *       configuration and state are used again (registriesConf and config are then ignored)
 *   interface SkiffInstance {
 *     dir, root, runDir, configPath, imageSocket, runtimeSocket,
 *     imageClient(): ImageServiceClient        (closed by stop())
 *     servicePid(name): Promise<number | undefined>
 *     waitForNewPid(name, oldPid): Promise<number>   after a crash, the supervisor's restart
 *     waitUntilImageServiceAnswers(): Promise<void>
 *     output(): string                         everything the supervisor printed
 *     stop({ keepDir? }?): Promise<void>       SIGTERM to the supervisor, waits, removes the temp dir
 *                                              (unless keepDir: then it can be started again)
 *   }
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SKIFF_COMMAND } from '@skiff/cli';
import { callUnary, createImageClient, createRuntimeClient, type ImageServiceClient } from '@skiff/proto';
import { makeTempDir, removeDir } from './tmp.js';
import { getFreePort } from './free-port.js';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
/** The `skiff` command's entry point, as its package exports it. */
export const SKIFF_ENTRY = createRequire(import.meta.url).resolve('@skiff/cli/main');

export interface SkiffOptions {
  /** containers-registries.conf(5) content. */
  registriesConf?: string;
  /** Extra TOML appended to the generated skiff.toml: keys of the [runtime] table, then tables. */
  config?: string;
  /** Extra keys of the [image], [stream] and [logs] tables. */
  imageConfig?: string;
  streamConfig?: string;
  logsConfig?: string;
  /** Extra keys of the [nri] table. */
  nriConfig?: string;
  /** The daemons' log_level (default debug, for the tests' diagnostics; benchmarks use info). */
  logLevel?: 'debug' | 'info';
  /** Start again on the directory (configuration and state) of an instance stopped with keepDir. */
  dir?: string;
}

export interface SkiffStopOptions {
  /** Leave the directory in place, for startSkiff({ dir }). */
  keepDir?: boolean;
}

export interface SkiffInstance {
  dir: string;
  root: string;
  runDir: string;
  configPath: string;
  imageSocket: string;
  runtimeSocket: string;
  imageClient(): ImageServiceClient;
  servicePid(name: string): Promise<number | undefined>;
  waitForNewPid(name: string, oldPid: number, timeoutMs?: number): Promise<number>;
  waitUntilImageServiceAnswers(timeoutMs?: number): Promise<void>;
  output(): string;
  stop(options?: SkiffStopOptions): Promise<void>;
}

export async function until<T>(what: string, timeoutMs: number, attempt: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await attempt();
      if (value !== undefined) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${lastError ? `: ${(lastError as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function startSkiff(options: SkiffOptions = {}): Promise<SkiffInstance> {
  const dir = options.dir ?? (await makeTempDir('skiff-e2e'));
  const root = join(dir, 'root');
  const runDir = join(dir, 'run');
  const registriesPath = join(dir, 'registries.conf');
  const configPath = join(dir, 'skiff.toml');
  if (options.dir === undefined) {
    await writeFile(registriesPath, options.registriesConf ?? '');
    await writeFile(
      configPath,
      [
        `root = "${root}"`,
        `run_dir = "${runDir}"`,
        `log_level = "${options.logLevel ?? 'debug'}"`,
        `log_file = "${join(dir, 'skiff.log')}"`,
        // Any free port for every daemon's metrics: instances run beside each other.
        `metrics_address = "127.0.0.1:0"`,
        `[image]`,
        `metrics_address = "127.0.0.1:0"`,
        `registries_config = "${registriesPath}"`,
        options.imageConfig ?? '',
        `[stream]`,
        `metrics_address = "127.0.0.1:0"`,
        `port = ${await getFreePort()}`,
        options.streamConfig ?? '',
        `[logs]`,
        `metrics_address = "127.0.0.1:0"`,
        options.logsConfig ?? '',
        `[nri]`,
        // Never the node's /var/run/nri/nri.sock: instances run beside each other.
        ...[
          ['socket', join(runDir, 'nri.sock')],
          ['plugin_dir', join(dir, 'nri-plugins')],
          ['plugin_config_dir', join(dir, 'nri-conf.d')],
        ]
          .filter(([key]) => !new RegExp(`^${key} *=`, 'm').test(options.nriConfig ?? ''))
          .map(([key, value]) => `${key} = "${value}"`),
        options.nriConfig ?? '',
        `[runtime]`,
        `metrics_address = "127.0.0.1:0"`,
        `cni_conf_dir = "${join(dir, 'cni')}"`,
        // One parent per instance: what a test finds under it is its own, even with others running.
        `cgroup_parent = "/${basename(dir)}"`,
        options.config ?? '',
      ].join('\n'),
    );
  }
  const imageSocket = join(runDir, 'image.sock');
  let output = '';
  const child: ChildProcess = spawn(SKIFF_COMMAND, ['up', '--config', configPath], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SKIFF_NODE: process.execPath } });
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const clients: ImageServiceClient[] = [];

  const instance: SkiffInstance = {
    dir,
    root,
    runDir,
    configPath,
    imageSocket,
    runtimeSocket: join(runDir, 'runtime.sock'),
    imageClient() {
      const client = createImageClient(imageSocket);
      clients.push(client);
      return client;
    },
    async servicePid(name) {
      try {
        const pid = Number.parseInt(await readFile(join(runDir, `${name}.pid`), 'utf8'), 10);
        return Number.isInteger(pid) ? pid : undefined;
      } catch {
        return undefined;
      }
    },
    waitForNewPid(name, oldPid, timeoutMs = 30_000) {
      return until(`${name} to restart`, timeoutMs, async () => {
        const pid = await instance.servicePid(name);
        return pid !== undefined && pid !== oldPid ? pid : undefined;
      });
    },
    async waitUntilImageServiceAnswers(timeoutMs = 30_000) {
      const client = createImageClient(imageSocket);
      await untilAnswers('image-svc', client, () => callUnary(client, 'ImageFsInfo', {}, { timeoutMs: 1000 }), timeoutMs);
    },
    output: () => output,
    async stop(stopOptions = {}) {
      for (const c of clients) c.close();
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
      if (!stopOptions.keepDir) await removeDir(dir);
    },
  };
  try {
    await instance.waitUntilImageServiceAnswers();
    // skiff up starts the services side by side: image-svc answering says nothing of runtime-svc.
    const runtime = createRuntimeClient(instance.runtimeSocket);
    await untilAnswers('runtime-svc', runtime, () => callUnary(runtime, 'Version', {}, { timeoutMs: 1000 }), 30_000);
  } catch (err) {
    child.kill('SIGTERM');
    await exited;
    if (options.dir === undefined) await removeDir(dir);
    throw new Error(`${(err as Error).message}\nskiff output:\n${output}`);
  }
  return instance;
}

/** Calls until a service answers (or the time is up), then closes its client. */
async function untilAnswers(service: string, client: { close(): void }, call: () => Promise<unknown>, timeoutMs: number): Promise<void> {
  try {
    await until(`${service} to answer`, timeoutMs, async () => {
      await call();
      return true;
    });
  } finally {
    client.close();
  }
}
