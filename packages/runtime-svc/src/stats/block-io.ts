import { promises as fs } from 'node:fs';
import { basename } from 'node:path';

/** A cgroup's I/O on one block device, as the kernel counts it. */
export interface BlockIo {
  major: number;
  minor: number;
  readBytes: number;
  writeBytes: number;
  reads: number;
  writes: number;
}

function device(out: Map<string, BlockIo>, key: string): BlockIo | undefined {
  const m = /^(\d+):(\d+)$/.exec(key);
  if (!m) return undefined;
  let io = out.get(key);
  if (!io) {
    io = { major: Number(m[1]), minor: Number(m[2]), readBytes: 0, writeBytes: 0, reads: 0, writes: 0 };
    out.set(key, io);
  }
  return io;
}

/** cgroup v1: blkio.throttle.io_service_bytes and blkio.throttle.io_serviced ("8:0 Read 4096" lines, a "Total" line). */
export function parseBlkioV1(serviceBytes: string | undefined, serviced: string | undefined): BlockIo[] {
  const out = new Map<string, BlockIo>();
  const add = (text: string | undefined, bytes: boolean): void => {
    for (const line of (text ?? '').split('\n')) {
      const [key, op, value] = line.trim().split(/\s+/);
      if (key === undefined || value === undefined || !/^\d+$/.test(value) || (op !== 'Read' && op !== 'Write')) continue;
      const io = device(out, key);
      if (!io) continue;
      if (op === 'Read') io[bytes ? 'readBytes' : 'reads'] += Number(value);
      else io[bytes ? 'writeBytes' : 'writes'] += Number(value);
    }
  };
  add(serviceBytes, true);
  add(serviced, false);
  return [...out.values()];
}

/** cgroup v2: io.stat ("8:0 rbytes=4096 wbytes=0 rios=1 wios=0 dbytes=0 dios=0" lines). */
export function parseIoStatV2(text: string | undefined): BlockIo[] {
  const out = new Map<string, BlockIo>();
  for (const line of (text ?? '').split('\n')) {
    const [key, ...fields] = line.trim().split(/\s+/);
    const io = key === undefined ? undefined : device(out, key);
    if (!io) continue;
    for (const field of fields) {
      const [name, value] = field.split('=');
      if (value === undefined || !/^\d+$/.test(value)) continue;
      if (name === 'rbytes') io.readBytes = Number(value);
      else if (name === 'wbytes') io.writeBytes = Number(value);
      else if (name === 'rios') io.reads = Number(value);
      else if (name === 'wios') io.writes = Number(value);
    }
  }
  return [...out.values()];
}

/** Device names by "major:minor": the machine's block devices are few and keep their numbers. */
const names = new Map<string, Promise<string>>();

/** A block device's /dev path from its numbers (/sys/dev/block links to the device), or "" when unknown. */
export function blockDeviceName(major: number, minor: number): Promise<string> {
  const key = `${major}:${minor}`;
  let name = names.get(key);
  if (!name) {
    name = fs.readlink(`/sys/dev/block/${key}`).then(
      (target) => `/dev/${basename(target)}`,
      () => '',
    );
    names.set(key, name);
  }
  return name;
}
