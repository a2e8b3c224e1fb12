import type { Metric } from './generated/runtime/v1/Metric.js';
import type { PodSandboxMetrics } from './generated/runtime/v1/PodSandboxMetrics.js';

/**
 * Encodes ListPodSandboxMetrics responses (and StreamPodSandboxMetrics ones, the same shape under
 * another name) straight to the wire: a hundred pods are thousands of metrics, each with six or
 * seven labels, where the generic serializer converts every int64 string and enum name and takes
 * tens of milliseconds. Sizes are computed first, then every byte is written once into one buffer.
 * Fields are written in field-number order; decoding gives what the generic serializer's bytes give.
 * A response holding values it does not handle (Long objects) goes to `fallback`.
 */
export class MetricsResponseEncoder<Response extends object> {
  /** The encoded name field (tag, length, bytes) of each metric name seen: there are a few dozen. */
  private readonly names = new Map<string, Buffer>();
  /**
   * The encoded label_values fields of each label array, during one serialize: a container's
   * metrics mostly share one array of labels.
   */
  private labels = new Map<readonly string[], Buffer>();

  constructor(
    private readonly field: keyof Response & string,
    private readonly fallback: (response: Response) => Buffer,
  ) {}

  readonly serialize = (response: Response): Buffer => {
    const pods = (response as Record<string, unknown>)[this.field] as PodSandboxMetrics[] | undefined;
    if (!Array.isArray(pods) || !pods.every(encodable)) return this.fallback(response);
    const sizes: number[] = [];
    let total = 0;
    for (const pod of pods) total += field(this.podSize(pod, sizes));
    const out = new Writer(total, sizes);
    for (const pod of pods) this.writePod(out, pod);
    this.labels = new Map();
    return out.buffer;
  };

  private labelFields(labels: readonly string[]): Buffer {
    let encoded = this.labels.get(labels);
    if (!encoded) {
      encoded = Buffer.concat(
        labels.map((label) => {
          const bytes = Buffer.from(label, 'utf8');
          return Buffer.concat([Buffer.from([0x22]), varint(bytes.length), bytes]);
        }),
      );
      this.labels.set(labels, encoded);
    }
    return encoded;
  }

  private name(name: string): Buffer {
    let encoded = this.names.get(name);
    if (!encoded) {
      const bytes = Buffer.from(name, 'utf8');
      encoded = Buffer.concat([Buffer.from([0x0a]), varint(bytes.length), bytes]);
      this.names.set(name, encoded);
    }
    return encoded;
  }

  private podSize(pod: PodSandboxMetrics, sizes: number[]): number {
    const at = sizes.push(0) - 1;
    let size = stringField(pod.pod_sandbox_id);
    for (const m of pod.metrics ?? []) size += field(this.metricSize(m, sizes));
    for (const c of pod.container_metrics ?? []) {
      const cAt = sizes.push(0) - 1;
      let cSize = stringField(c.container_id);
      for (const m of c.metrics ?? []) cSize += field(this.metricSize(m, sizes));
      sizes[cAt] = cSize;
      size += field(cSize);
    }
    sizes[at] = size;
    return size;
  }

  private metricSize(m: Metric, sizes: number[]): number {
    let size = m.name === undefined ? 0 : this.name(m.name).length;
    if (m.timestamp !== undefined) size += 1 + u64Size(m.timestamp as string | number);
    if (m.metric_type !== undefined) size += 1 + varintSize(typeNumber(m.metric_type));
    if (m.label_values) size += this.labelFields(m.label_values).length;
    if (m.value) size += field(m.value.value === undefined ? 0 : 1 + u64Size(m.value.value as string | number));
    sizes.push(size);
    return size;
  }

  private writePod(out: Writer, pod: PodSandboxMetrics): void {
    out.header(0x0a);
    out.string(0x0a, pod.pod_sandbox_id);
    for (const m of pod.metrics ?? []) this.writeMetric(out, 0x12, m);
    for (const c of pod.container_metrics ?? []) {
      out.header(0x1a);
      out.string(0x0a, c.container_id);
      for (const m of c.metrics ?? []) this.writeMetric(out, 0x12, m);
    }
  }

  private writeMetric(out: Writer, tag: number, m: Metric): void {
    out.header(tag);
    if (m.name !== undefined) out.bytes(this.name(m.name));
    if (m.timestamp !== undefined) out.u64(0x10, m.timestamp as string | number);
    if (m.metric_type !== undefined) {
      out.byte(0x18);
      out.varint(typeNumber(m.metric_type));
    }
    if (m.label_values) out.bytes(this.labelFields(m.label_values));
    if (m.value) {
      out.byte(0x2a);
      out.varint(m.value.value === undefined ? 0 : 1 + u64Size(m.value.value as string | number));
      if (m.value.value !== undefined) out.u64(0x08, m.value.value as string | number);
    }
  }
}

function encodable(pod: PodSandboxMetrics): boolean {
  const ok = (m: Metric): boolean => isPlain(m.timestamp) && (!m.value || isPlain(m.value.value));
  return (pod.metrics ?? []).every(ok) && (pod.container_metrics ?? []).every((c) => (c.metrics ?? []).every(ok));
}

function isPlain(v: unknown): boolean {
  return v === undefined || typeof v === 'number' || (typeof v === 'string' && /^-?\d+$/.test(v));
}

function typeNumber(t: NonNullable<Metric['metric_type']>): number {
  return t === 'GAUGE' || t === 1 ? 1 : 0;
}

function varintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

function lengthDelimited(length: number): number {
  return varintSize(length) + length;
}

/** A nested message field's size: tag, length, message. */
function field(size: number): number {
  return 1 + lengthDelimited(size);
}

function stringField(s: string | undefined): number {
  return s === undefined ? 0 : 1 + lengthDelimited(Buffer.byteLength(s));
}

/** A value small enough to be a safe number, as one (most counters are), else undefined. */
function small(v: string | number): number | undefined {
  if (typeof v === 'number') return v >= 0 && Number.isSafeInteger(v) ? v : undefined;
  return v.length <= 15 && v[0] !== '-' ? Number(v) : undefined;
}

let lastText = '';
let lastBytes = Buffer.alloc(0);

/** A 64-bit integer's varint bytes: negative ones in two's complement (ten bytes). */
function u64Bytes(v: string | number): Buffer {
  // Every metric of a response has the same timestamp.
  if (v === lastText) return lastBytes;
  let n = BigInt(typeof v === 'number' ? Math.trunc(v) : v);
  if (n < 0n) n += 1n << 64n;
  const bytes: number[] = [];
  while (n >= 0x80n) {
    bytes.push(Number(n & 0x7fn) | 0x80);
    n >>= 7n;
  }
  bytes.push(Number(n));
  const encoded = Buffer.from(bytes);
  if (typeof v === 'string') [lastText, lastBytes] = [v, encoded];
  return encoded;
}

function u64Size(v: string | number): number {
  const n = small(v);
  return n !== undefined ? varintSize(n) : u64Bytes(v).length;
}

function varint(n: number): Buffer {
  const bytes: number[] = [];
  while (n >= 0x80) {
    bytes.push((n % 128) | 0x80);
    n = Math.floor(n / 128);
  }
  bytes.push(n);
  return Buffer.from(bytes);
}

/** Writes into a buffer of the size computed beforehand; nested lengths come from `sizes`, in order. */
class Writer {
  readonly buffer: Buffer;
  private offset = 0;
  private next = 0;

  constructor(
    total: number,
    private readonly sizes: readonly number[],
  ) {
    this.buffer = Buffer.allocUnsafe(total);
  }

  byte(b: number): void {
    this.buffer[this.offset++] = b;
  }

  varint(n: number): void {
    while (n >= 0x80) {
      this.buffer[this.offset++] = (n % 128) | 0x80;
      n = Math.floor(n / 128);
    }
    this.buffer[this.offset++] = n;
  }

  /** The tag and length of the next nested message. */
  header(tag: number): void {
    this.byte(tag);
    this.varint(this.sizes[this.next++]!);
  }

  bytes(b: Buffer): void {
    this.buffer.set(b, this.offset);
    this.offset += b.length;
  }

  string(tag: number, s: string | undefined): void {
    if (s === undefined) return;
    this.byte(tag);
    const length = Buffer.byteLength(s);
    this.varint(length);
    this.offset += this.buffer.write(s, this.offset, length, 'utf8');
  }

  u64(tag: number, v: string | number): void {
    this.byte(tag);
    const n = small(v);
    if (n !== undefined) this.varint(n);
    else this.bytes(u64Bytes(v));
  }
}
