/**
 * What the kubelet's own log (klog, `--v 2`) says about each pod's start, with its times:
 *   - "SyncLoop ADD": the kubelet got the pod from the API server;
 *   - "SyncLoop (PLEG): event for pod" ContainerStarted: its relist (every second) saw a sandbox or
 *     container running, by id;
 *   - "Observed pod startup duration": the figure it adds to kubelet_pod_start_sli_duration_seconds
 *     (podStartSLOduration, in seconds), when it saw the pod running (observedRunningTime) and when
 *     its own watch saw that status (watchObservedRunningTime, the SLI's end).
 * Header times are the kubelet's local time to the microsecond; the year is the caller's.
 */

export interface KubeletPodTimes {
  /** Epoch ms of the first "SyncLoop ADD" naming the pod. */
  addMs?: number;
  /** Epoch ms of each ContainerStarted PLEG event, by the sandbox's or container's id. */
  startedMs: Map<string, number>;
  sloSeconds?: number;
  observedRunningMs?: number;
  watchObservedRunningMs?: number;
}

const HEADER = /^[IWE](\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{6})\s/;

/** A klog header's time as epoch ms (local time, in `year`). */
export function klogTimeMs(line: string, year: number): number | undefined {
  const m = HEADER.exec(line);
  if (!m) return undefined;
  const [mon, day, h, min, s, micros] = m.slice(1).map(Number) as [number, number, number, number, number, number];
  return new Date(year, mon - 1, day, h, min, s).getTime() + micros / 1000;
}

/** A Go time.Time as printed ("2026-11-27 17:20:01.123456789 +0000 UTC m=+1.2") as epoch ms. */
export function goTimeMs(text: string): number | undefined {
  const m = /(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(\.\d+)? ([+-]\d{2})(\d{2})/.exec(text);
  if (!m) return undefined;
  const whole = Date.parse(`${m[1]}T${m[2]}${m[4]}:${m[5]}`);
  return whole + (m[3] ? Number(m[3]) * 1000 : 0);
}

function quoted(line: string, key: string): string | undefined {
  return new RegExp(` ${key}="([^"]*)"`).exec(line)?.[1];
}

export function readKubeletLog(text: string, namespace: string, year: number): Map<string, KubeletPodTimes> {
  const pods = new Map<string, KubeletPodTimes>();
  const entry = (name: string): KubeletPodTimes => {
    let times = pods.get(name);
    if (times === undefined) pods.set(name, (times = { startedMs: new Map() }));
    return times;
  };
  const prefix = `${namespace}/`;
  for (const line of text.split('\n')) {
    if (line.includes('"SyncLoop ADD"')) {
      const at = klogTimeMs(line, year);
      const names = /pods=\[([^\]]*)\]/.exec(line)?.[1] ?? '';
      for (const ref of names.split(',').map((n) => n.replace(/"/g, '').trim())) {
        if (!ref.startsWith(prefix)) continue;
        const times = entry(ref.slice(prefix.length));
        times.addMs ??= at;
      }
    } else if (line.includes('"SyncLoop (PLEG): event for pod"')) {
      const ref = quoted(line, 'pod');
      const event = /event=(\{.*\})\s*$/.exec(line)?.[1];
      const at = klogTimeMs(line, year);
      if (!ref?.startsWith(prefix) || event === undefined || at === undefined) continue;
      const { Type, Data } = JSON.parse(event) as { Type?: string; Data?: unknown };
      if (Type === 'ContainerStarted' && typeof Data === 'string') {
        const started = entry(ref.slice(prefix.length)).startedMs;
        if (!started.has(Data)) started.set(Data, at);
      }
    } else if (line.includes('"Observed pod startup duration"')) {
      const ref = quoted(line, 'pod');
      if (!ref?.startsWith(prefix)) continue;
      const times = entry(ref.slice(prefix.length));
      const slo = / podStartSLOduration=(\S+)/.exec(line)?.[1];
      if (slo !== undefined) times.sloSeconds = Number(slo);
      const observed = quoted(line, 'observedRunningTime');
      const watched = quoted(line, 'watchObservedRunningTime');
      if (observed !== undefined) times.observedRunningMs = goTimeMs(observed);
      if (watched !== undefined) times.watchObservedRunningMs = goTimeMs(watched);
    }
  }
  return pods;
}
