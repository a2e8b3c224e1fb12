import { dirname } from 'node:path';
import type { cri } from '@skiff/proto';
import type { RuntimeContext } from '../daemon/context.js';
import type { ContainerRecord, SandboxRecord } from '../state/records.js';
import { cgroupMounts, parseProcCgroup } from '../cgroups/cgroups.js';
import { DiskUsageCache, filesystemCapacity } from './disk-usage.js';
import { blockDeviceName } from './block-io.js';
import { nowNanos } from '../util/time.js';
import { cgroupDirs, cgroupFiles, readCgroupSample, readIn, readSampleTexts, sampleFromTexts, sumSamples, withoutRootUnified, type CgroupDirs, type CgroupSample, type Pressure, type PressureLine } from './cgroup-stats.js';
import { CpuRates } from './cpu-rate.js';
import { parseNetDev, type InterfaceCounters } from './net-dev.js';
import { readCgroupReading, type CgroupDetail } from './cgroup-detail.js';
import { readSmallFile } from './read-small-file.js';
import { isSoleLiveContainer, readSandboxedProcessCount, readSandboxedSample, sandboxedReading } from './sandboxed-stats.js';
import { isSameProcessRunning } from '../process/processes.js';
import { runCommand } from '@skiff/common';
import { sandboxHandler } from '../daemon/runtime-handlers.js';

function u64(v: number | undefined): cri.UInt64Value | null {
  return v === undefined || !Number.isFinite(v) ? null : { value: Math.max(0, Math.round(v)) };
}

function psiData(line: PressureLine | undefined): cri.PsiData | null {
  return line ? { Total: Math.round(line.totalNanos), Avg10: line.avg10, Avg60: line.avg60, Avg300: line.avg300 } : null;
}

function psi(pressure: Pressure | undefined): cri.PsiStats | null {
  return pressure ? { Some: psiData(pressure.some), Full: psiData(pressure.full) } : null;
}

/** I/O usage: the CRI carries only its pressure, which cgroup v1 alone does not have. */
function ioUsage(at: string, sample: CgroupSample): cri.IoUsage | null {
  return sample.ioPressure ? { timestamp: at, psi: psi(sample.ioPressure) } : null;
}

/** What StatsCollector.containerReading answers. */
export interface ContainerCounters {
  sample: CgroupSample;
  detail: CgroupDetail;
  layer: { bytes: number; inodes: number; limitBytes?: number; inodesFree?: number };
  /** Block device names by "major:minor" (see blockDeviceName). */
  devices: Map<string, string>;
}

/**
 * Container and pod statistics read straight from the cgroups of the processes (found through
 * /proc/<pid>/cgroup, which works with either cgroup driver), the pod's network namespace and the
 * containers' writable layers. CPU rates are measured against an earlier reading (cpu-rate.ts).
 */
export class StatsCollector {
  private readonly cpuRates = new CpuRates();
  private readonly disk = new DiskUsageCache();
  private mounts: Promise<Map<string, string>> | undefined;
  /**
   * Where each live container's cgroup files are, by container id (a process keeps its cgroup),
   * with the texts of its limit files as last read: only UpdateContainerResources changes them,
   * and it drops them (resourcesChanged).
   */
  private readonly dirs = new Map<string, { pid: number; dirs: CgroupDirs | undefined; limits: Map<string, Promise<string | undefined>> }>();

  constructor(private readonly ctx: RuntimeContext) {}

  private async cgroupsOf(pid: number | undefined): Promise<Map<string, string> | undefined> {
    if (pid === undefined) return undefined;
    const text = await readSmallFile(`/proc/${pid}/cgroup`);
    return text === undefined ? undefined : parseProcCgroup(text);
  }

  private async sampleOf(cgroups: Map<string, string> | undefined): Promise<CgroupSample> {
    if (!cgroups) return {};
    this.mounts ??= cgroupMounts();
    return readCgroupSample(cgroups, await this.mounts);
  }

  private cpuUsage(key: string, at: string, sample: CgroupSample): cri.CpuUsage {
    const usage: cri.CpuUsage = { timestamp: at, usage_core_nano_seconds: u64(sample.cpuNanos), psi: psi(sample.cpuPressure) };
    if (sample.cpuNanos !== undefined) usage.usage_nano_cores = u64(this.cpuRates.rate(key, BigInt(at), sample.cpuNanos));
    return usage;
  }

  /** Swap in use, and how much more the container may use where its swap is limited. */
  private swapUsage(at: string, sample: CgroupSample): cri.SwapUsage | null {
    if (sample.swapUsage === undefined) return null;
    const available = sample.swapLimit === undefined ? undefined : sample.swapLimit - sample.swapUsage;
    return { timestamp: at, swap_usage_bytes: u64(sample.swapUsage), swap_available_bytes: u64(available) };
  }

  private memoryUsage(at: string, sample: CgroupSample): cri.MemoryUsage {
    const available = sample.memoryLimit !== undefined && sample.workingSet !== undefined ? sample.memoryLimit - sample.workingSet : undefined;
    return {
      timestamp: at,
      working_set_bytes: u64(sample.workingSet),
      available_bytes: u64(available),
      usage_bytes: u64(sample.memoryUsage),
      rss_bytes: u64(sample.rss),
      page_faults: u64(sample.pageFaults),
      major_page_faults: u64(sample.majorPageFaults),
      psi: psi(sample.memoryPressure),
    };
  }

  /** The cgroup directories of a live container's process, looked up once per process. */
  private async containerDirs(rec: ContainerRecord): Promise<CgroupDirs | undefined> {
    return (await this.containerCgroup(rec))?.dirs;
  }

  private async containerCgroup(rec: ContainerRecord): Promise<{ dirs: CgroupDirs | undefined; limits: Map<string, Promise<string | undefined>> } | undefined> {
    if ((rec.phase !== 'running' && rec.phase !== 'created') || rec.pid === undefined) return undefined;
    const known = this.dirs.get(rec.id);
    if (known?.pid === rec.pid) return known;
    const cgroups = await this.cgroupsOf(rec.pid);
    if (!cgroups) return undefined;
    this.mounts ??= cgroupMounts();
    const entry = { pid: rec.pid, dirs: cgroupDirs(cgroups, await this.mounts), limits: new Map<string, Promise<string | undefined>>() };
    this.dirs.set(rec.id, entry);
    return entry;
  }

  /** The container's limits were changed: they are read again next time. */
  resourcesChanged(idOrPrefix: string): void {
    for (const [id, entry] of this.dirs) if (id.startsWith(idOrPrefix)) entry.limits.clear();
  }

  /**
   * A container's cgroup counters with the detail the cAdvisor metrics add, its writable layer's
   * use with its filesystem's capacity, and the names of the block devices it did I/O on.
   */
  async containerReading(rec: ContainerRecord): Promise<ContainerCounters> {
    const upper = this.ctx.paths.container(rec.id).upper;
    const [reading, usage, capacity] = await Promise.all([this.cgroupReading(rec), this.disk.get(upper), filesystemCapacity(upper)]);
    const devices = new Map<string, string>();
    for (const io of reading.detail.blockIo ?? []) devices.set(`${io.major}:${io.minor}`, await blockDeviceName(io.major, io.minor));
    return { ...reading, layer: { ...usage, ...capacity }, devices };
  }

  private async cgroupReading(rec: ContainerRecord): Promise<{ sample: CgroupSample; detail: CgroupDetail }> {
    const sandboxed = sandboxHandler(this.ctx.handlers, rec.runtimeHandler);
    // runsc knows a container from StartContainer on (when it gets a pid).
    if ((rec.phase === 'running' || rec.phase === 'created') && rec.pid !== undefined && sandboxed) {
      const [own, processes, soleContainerPod] = await Promise.all([
        readSandboxedSample(sandboxed.runc, rec.id),
        readSandboxedProcessCount(sandboxed.runc, rec.id),
        this.soleContainerPodReading(rec),
      ]);
      return sandboxedReading(own, processes, soleContainerPod);
    }
    const cgroup = await this.containerCgroup(rec);
    if (!cgroup?.dirs) return { sample: {}, detail: {} };
    const readLimit = (dir: string | undefined, name: string): Promise<string | undefined> => {
      const key = `${dir}/${name}`;
      let text = cgroup.limits.get(key);
      if (!text) {
        text = readIn(dir, name).then((t) => {
          // A file that could not be read is tried again next time.
          if (t === undefined) cgroup.limits.delete(key);
          return t;
        });
        cgroup.limits.set(key, text);
      }
      return text;
    };
    return readCgroupReading(cgroup.dirs, readLimit);
  }

  /**
   * The pod cgroup's reading for a container of a sandbox-kind runtime that is its pod's only
   * container: all the cgroup holds is then that container and the sandbox (see sandboxedReading).
   */
  private async soleContainerPodReading(rec: ContainerRecord): Promise<{ sample: CgroupSample; detail: CgroupDetail } | undefined> {
    const dirs = await this.soleContainerPodDirs(rec);
    return dirs ? readCgroupReading(dirs) : undefined;
  }

  /** The pod cgroup's directories when `rec` is its pod's only live container (see soleContainerPodReading). */
  private async soleContainerPodDirs(rec: ContainerRecord): Promise<CgroupDirs | undefined> {
    const pod = this.ctx.state.sandboxes.get(rec.sandboxId);
    if (pod?.phase !== 'ready' || !isSoleLiveContainer(rec.id, this.ctx.state.containersOf(pod.id))) return undefined;
    const cgroups = await this.podCgroupsOf(pod);
    if (!cgroups) return undefined;
    this.mounts ??= cgroupMounts();
    return cgroupDirs(cgroups, await this.mounts);
  }

  /** The cgroups of a ready pod: the kubelet's pod cgroup when it gave one (the parent of the sandbox's), else the sandbox's. */
  private async podCgroupsOf(rec: SandboxRecord): Promise<Map<string, string> | undefined> {
    const found = rec.phase === 'ready' ? await this.cgroupsOf(rec.pid) : undefined;
    const sandboxCgroups = found && withoutRootUnified(found);
    if (!rec.podCgroupGiven || !sandboxCgroups) return sandboxCgroups;
    return new Map([...sandboxCgroups].map(([controller, path]) => [controller, dirname(path)]));
  }

  /** Drops what is kept for containers that are gone (a pod's removal takes its containers along). */
  forgetAllBut(containerIds: ReadonlySet<string>): void {
    for (const id of this.dirs.keys()) {
      if (!containerIds.has(id)) this.forget(id);
    }
  }

  /**
   * The interfaces of a pod's own network namespace (none on the host network), through its pause
   * process; in a pod without one, through a running container of the pod, else through a
   * process entered into the namespace for the reading.
   */
  async podInterfaces(rec: SandboxRecord): Promise<InterfaceCounters[]> {
    if (rec.namespaces.network === 'NODE' || rec.phase !== 'ready') return [];
    let text: string | undefined;
    if (rec.pauseless) text = await this.netDevWithoutPause(rec);
    else if (rec.pid !== undefined) text = await readSmallFile(`/proc/${rec.pid}/net/dev`);
    return text === undefined ? [] : parseNetDev(text);
  }

  private async netDevWithoutPause(rec: SandboxRecord): Promise<string | undefined> {
    if (sandboxHandler(this.ctx.handlers, rec.runtimeHandler)) return undefined;
    for (const c of this.ctx.state.containersOf(rec.id)) {
      if (c.phase !== 'running' || c.pid === undefined || c.pidStartTime === undefined) continue;
      const text = await readSmallFile(`/proc/${c.pid}/net/dev`);
      // Still that container's process after the read: the text was read in the pod's namespace.
      if (text !== undefined && isSameProcessRunning(c.pid, c.pidStartTime)) return text;
    }
    if (!rec.netnsPath) return undefined;
    const result = await runCommand('nsenter', [`--net=${rec.netnsPath}`, '--', 'cat', '/proc/self/net/dev'], { timeoutMs: 10_000 });
    return result.code === 0 ? result.stdout : undefined;
  }

  /**
   * The kubelet's pod cgroup of a pod without a pause: with cgroupfs, the parent of the path its
   * pause would have had in every hierarchy; with systemd, the parent of a running container's.
   */
  private async podCgroupsWithoutPause(rec: SandboxRecord, containers: readonly ContainerRecord[]): Promise<Map<string, string> | undefined> {
    if (this.ctx.cgroupDriver === 'cgroupfs') {
      this.mounts ??= cgroupMounts();
      const pod = dirname(rec.cgroupsPath);
      return new Map([...(await this.mounts).keys()].map((controller) => [controller, pod]));
    }
    const running = containers.find((c) => c.phase === 'running' && c.pid !== undefined);
    const cgroups = await this.cgroupsOf(running?.pid);
    return cgroups && new Map([...cgroups].map(([controller, path]) => [controller, dirname(path)]));
  }

  private async sampleContainer(rec: ContainerRecord): Promise<CgroupSample> {
    const sandboxed = sandboxHandler(this.ctx.handlers, rec.runtimeHandler);
    if (sandboxed) {
      if ((rec.phase !== 'running' && rec.phase !== 'created') || rec.pid === undefined) return {};
      const [own, podDirs] = await Promise.all([readSandboxedSample(sandboxed.runc, rec.id), this.soleContainerPodDirs(rec)]);
      const pod = podDirs ? { sample: sampleFromTexts(await readSampleTexts(podDirs)), detail: {} } : undefined;
      return sandboxedReading(own, undefined, pod).sample;
    }
    const dirs = await this.containerDirs(rec);
    return dirs ? sampleFromTexts(await readSampleTexts(dirs)) : {};
  }

  async containerStats(rec: ContainerRecord): Promise<cri.ContainerStats> {
    return this.containerStatsOf(rec, await this.timedSample(rec));
  }

  /** A container's sample with the time it was taken at. */
  private async timedSample(rec: ContainerRecord): Promise<{ at: string; sample: CgroupSample }> {
    const at = nowNanos();
    return { at, sample: await this.sampleContainer(rec) };
  }

  private async containerStatsOf(rec: ContainerRecord, { at, sample }: { at: string; sample: CgroupSample }): Promise<cri.ContainerStats> {
    const paths = this.ctx.paths.container(rec.id);
    const layer = await this.disk.get(paths.upper);
    return {
      attributes: { id: rec.id, metadata: rec.metadata, labels: rec.labels, annotations: rec.annotations },
      cpu: this.cpuUsage(rec.id, at, sample),
      memory: this.memoryUsage(at, sample),
      swap: this.swapUsage(at, sample),
      io: ioUsage(at, sample),
      writable_layer: { timestamp: at, fs_id: { mountpoint: this.ctx.paths.containersDir }, used_bytes: u64(layer.bytes), inodes_used: u64(layer.inodes) },
    };
  }

  /** Each container is sampled once: its stats and the pod's sum come from the same reading. */
  async podStats(rec: SandboxRecord, containers: readonly ContainerRecord[]): Promise<cri.PodSandboxStats> {
    const at = nowNanos();
    const readings = await Promise.all(containers.map((c) => this.timedSample(c)));
    const containerStats = await Promise.all(containers.map((c, i) => this.containerStatsOf(c, readings[i]!)));
    const containerSamples = readings.map((r) => r.sample);
    let sample: CgroupSample;
    if (rec.pauseless) {
      // No process of its own: the kubelet's pod cgroup, else the sum of its containers'.
      const podCgroups = rec.podCgroupGiven && rec.phase === 'ready' ? await this.podCgroupsWithoutPause(rec, containers) : undefined;
      sample = podCgroups ? await this.sampleOf(podCgroups) : sumSamples(containerSamples);
    } else {
      sample = await this.sampleWithPause(rec, containerSamples);
    }
    const linux: cri.LinuxPodSandboxStats = {
      cpu: this.cpuUsage(`pod:${rec.id}`, at, sample),
      memory: this.memoryUsage(at, sample),
      process: { timestamp: at, process_count: u64(sample.pids) },
      containers: containerStats,
      io: ioUsage(at, sample),
    };
    const interfaces = await this.podInterfaces(rec);
    if (interfaces.length > 0) {
      const counters = interfaces.map((c) => ({
        name: c.name,
        rx_bytes: u64(c.rxBytes),
        rx_errors: u64(c.rxErrors),
        tx_bytes: u64(c.txBytes),
        tx_errors: u64(c.txErrors),
      }));
      const primary = counters.find((c) => c.name === 'eth0') ?? counters[0] ?? null;
      // The default interface is listed too: the kubelet's summary takes a pod's interfaces from this
      // list alone (containerd lists them all the same way).
      linux.network = { timestamp: at, default_interface: primary, interfaces: counters };
    }
    return { attributes: { id: rec.id, metadata: rec.metadata, labels: rec.labels, annotations: rec.annotations }, linux };
  }

  /** A pod with a pause: the kubelet's pod cgroup (its cgroup's parent), else the sum of the pause's and the containers'. */
  private async sampleWithPause(rec: SandboxRecord, containerSamples: CgroupSample[]): Promise<CgroupSample> {
    const podCgroups = await this.podCgroupsOf(rec);
    if (rec.podCgroupGiven && podCgroups) return this.sampleOf(podCgroups);
    return sumSamples([await this.sampleOf(podCgroups), ...containerSamples]);
  }

  /** Drops what is kept between readings for a removed container or sandbox. */
  forget(id: string): void {
    const dirs = this.dirs.get(id)?.dirs;
    if (dirs) cgroupFiles.closeDirs([dirs.cpu, dirs.cpuacct, dirs.memory, dirs.pids, dirs.blkio, dirs.unified]);
    this.dirs.delete(id);
    this.cpuRates.forget(id);
    this.cpuRates.forget(`pod:${id}`);
    this.disk.forget(this.ctx.paths.container(id).upper);
  }
}
