import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadCri, runtimeServiceDefinition, type cri } from '@skiff/proto';
import { criContainerContent, toCriContainer } from '../container/container-view.js';
import type { RuntimeContext } from '../daemon/context.js';
import { ExitWatchState } from '../events/exit-watch-state.js';
import { RuntimePaths } from '../daemon/paths.js';
import { sandboxIsReady } from '../sandbox/sandbox-state.js';
import { criSandboxContent, toCriSandbox } from '../sandbox/sandbox-view.js';
import type { ContainerPhase, ContainerRecord, SandboxRecord } from '../state/records.js';
import { StateIndex } from '../state/state-index.js';
import { containerRecordFixture, sandboxRecordFixture } from '../state/record-fixtures.js';
import { sameContent, type EntryContent } from '../listing/list-entry-cache.js';
import { listContainersCall as listContainers } from './container-list.js';
import { ContainerEvents } from '../events/container-events.js';
import { listPodSandboxCall as listPodSandbox } from './pod-sandbox-list.js';

// The serializers as loaded from api.proto, untouched: what every entry must stay equal to.
const ordinary = loadCri().RuntimeService.service;
const fast = runtimeServiceDefinition;

const SANDBOX_A = 'a'.repeat(64);
const SANDBOX_B = 'ab'.repeat(32);

let counter = 0;
function containerRecord(phase: ContainerPhase, createdAt: string, extra: Partial<ContainerRecord> = {}): ContainerRecord {
  counter++;
  const id = `${counter.toString(16).padStart(4, '0')}${'c'.repeat(60)}`;
  return containerRecordFixture(id, counter % 2 === 0 ? SANDBOX_A : SANDBOX_B, phase, {
    metadata: { name: `app-${counter}`, attempt: counter % 3 },
    fullName: `k8s_app-${counter}`,
    nameKey: `app-${counter}`,
    createdAt,
    // This process: alive, so created and running records are not refreshed unless an exit file says so.
    pid: phase === 'created' || phase === 'running' ? process.pid : undefined,
    ...extra,
  });
}

function sandboxRecord(phase: SandboxRecord['phase'], createdAt: string, labels: Record<string, string>): SandboxRecord {
  counter++;
  return sandboxRecordFixture(`${counter.toString(16).padStart(4, '0')}${'5'.repeat(60)}`, phase, {
    metadata: { name: `pod-${counter}`, uid: `uid-${counter}`, namespace: 'default', attempt: 0 },
    createdAt,
    runtimeHandler: counter % 2 ? '' : 'runc',
    labels,
    annotations: { 'kubernetes.io/config.seen': `2024-01-01T00:00:0${counter % 10}Z` },
    hostname: `pod-${counter}`,
    pid: phase === 'ready' ? process.pid : undefined,
  });
}

/** Decodes both encodings, checks they hold the same list, and that the bytes are the same too. */
function assertSameEncoding(method: 'ListContainers' | 'ListPodSandbox', fastBytes: Buffer, expected: Buffer): void {
  const decode = ordinary[method].responseDeserialize;
  assert.deepEqual(decode(fastBytes), decode(expected));
  assert.ok(fastBytes.equals(expected), `${method}: the bytes differ from the ordinary encoding`);
}

describe('list responses encoded from cached entries', () => {
  let dir: string;
  let paths: RuntimePaths;
  const state = new StateIndex();
  const saved: string[] = [];
  let ctx: RuntimeContext;

  before(async () => {
    dir = await fs.mkdtemp(join(tmpdir(), 'skiff-list-'));
    paths = new RuntimePaths(join(dir, 'root'), join(dir, 'run'));
    await fs.mkdir(paths.exitDir, { recursive: true });
    const noop = (): void => undefined;
    const partial: Pick<RuntimeContext, 'paths' | 'state' | 'records' | 'journald' | 'log' | 'events' | 'exitWatch'> = {
      paths,
      state,
      exitWatch: new ExitWatchState(),
      events: new ContainerEvents(state, 10),
      // Only saveContainer is reached (when a refresh records an exit).
      records: { saveContainer: async (rec: ContainerRecord) => void saved.push(rec.id) } as unknown as RuntimeContext['records'],
      journald: false,
      log: { debug: noop, info: noop, warn: noop, error: noop } as unknown as RuntimeContext['log'],
    };
    ctx = partial as RuntimeContext;

    const records = [
      containerRecord('running', '1700000000000000300', { labels: { app: 'web', tier: 'front', 'io.kubernetes.pod.name': 'web-0' } }),
      containerRecord('created', '1700000000000000100', { annotations: { 'io.kubernetes.container.hash': 'abc', note: 'ünïcødé ✓', empty: '' } }),
      containerRecord('exited', '999', { exitCode: 1, reason: 'Error', finishedAt: '1000', labels: { app: 'job' } }),
      containerRecord('creating', '1700000000000000200', { labels: { app: 'web' } }),
      containerRecord('removing', '1700000000000000200', { labels: { app: 'web', tier: 'back' } }),
      containerRecord('running', '1700000000000000050', { labels: { app: 'web', tier: 'front' }, annotations: { a: '1', b: '2', c: '3' } }),
      containerRecord('created', '1700000000000000400', { image: { requested: 'x', id: 'sha256:3', ref: 'sha256:3', display: 'sha256:3' } }),
      containerRecord('exited', '1700000000000000000', { exitCode: 0, reason: 'Completed', finishedAt: '1700000000000000999' }),
    ];
    for (const rec of records) state.containers.set(rec.id, rec);
    for (const rec of [
      sandboxRecord('ready', '1700000000000000200', { app: 'web' }),
      sandboxRecord('stopped', '1700000000000000100', { app: 'web', tier: 'front' }),
      sandboxRecord('ready', '1700000000000000000', {}),
      sandboxRecord('creating', '1700000000000000300', { app: 'job' }),
    ]) {
      state.sandboxes.set(rec.id, rec);
    }
  });

  after(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  /** The listing as it was computed before entries were cached: matching records, oldest first, each built and encoded afresh. */
  function expectedContainers(filter: cri.ContainerFilter__Output | null): Buffer {
    const stateOf: Record<ContainerPhase, cri.ContainerState__Output> = {
      creating: 'CONTAINER_UNKNOWN',
      created: 'CONTAINER_CREATED',
      running: 'CONTAINER_RUNNING',
      exited: 'CONTAINER_EXITED',
      removing: 'CONTAINER_UNKNOWN',
    };
    const recs = [...state.containers.values()]
      .filter((rec) => !filter?.id || rec.id.startsWith(filter.id))
      .filter((rec) => !filter?.pod_sandbox_id || rec.sandboxId.startsWith(filter.pod_sandbox_id))
      .filter((rec) => Object.entries(filter?.label_selector ?? {}).every(([k, v]) => rec.labels[k] === v))
      .filter((rec) => !filter?.state || stateOf[rec.phase] === filter.state.state)
      .sort((a, b) => (BigInt(a.createdAt) < BigInt(b.createdAt) ? -1 : BigInt(a.createdAt) > BigInt(b.createdAt) ? 1 : 0));
    return ordinary.ListContainers.responseSerialize({ containers: recs.map(toCriContainer) });
  }

  function containerFilters(): (cri.ContainerFilter__Output | null)[] {
    const first = [...state.containers.values()][0]!;
    const filter = (f: Partial<cri.ContainerFilter__Output>): cri.ContainerFilter__Output => ({ id: '', pod_sandbox_id: '', state: null, label_selector: {}, ...f });
    return [
      null,
      filter({}),
      filter({ id: first.id }),
      filter({ id: first.id.slice(0, 6) }),
      filter({ pod_sandbox_id: SANDBOX_A }),
      filter({ pod_sandbox_id: SANDBOX_B.slice(0, 8) }),
      filter({ label_selector: { app: 'web' } }),
      filter({ label_selector: { app: 'web', tier: 'front' } }),
      filter({ label_selector: { app: 'none' } }),
      ...(['CONTAINER_CREATED', 'CONTAINER_RUNNING', 'CONTAINER_EXITED', 'CONTAINER_UNKNOWN'] as const).map((s) => filter({ state: { state: s } })),
      filter({ pod_sandbox_id: SANDBOX_A, state: { state: 'CONTAINER_RUNNING' }, label_selector: { app: 'web' } }),
    ];
  }

  async function assertContainerListings(): Promise<void> {
    for (const filter of containerFilters()) {
      // Twice: the first listing may seal new entries, the second reuses them.
      for (let round = 0; round < 2; round++) {
        const response = await listContainers(ctx, { filter });
        assertSameEncoding('ListContainers', fast.ListContainers.responseSerialize(response), expectedContainers(filter));
      }
    }
  }

  it('ListContainers: the same bytes as the ordinary encoding, for every filter, listed again and again', async () => {
    await assertContainerListings();
    const a = await listContainers(ctx, { filter: null });
    const b = await listContainers(ctx, { filter: null });
    assert.equal(a.containers?.length, state.containers.size);
    a.containers?.forEach((entry, i) => assert.equal(entry, b.containers?.[i], 'an unchanged container keeps its sealed entry'));
  });

  it('a change to anything encoded, made in place or by replacement, is encoded again', async () => {
    const recs = [...state.containers.values()];
    const before = new Map((await listContainers(ctx, { filter: null })).containers?.map((c) => [c.id, c]));
    recs[0]!.labels['added'] = 'in place';
    recs[1]!.annotations['note'] = 'changed';
    recs[2]!.metadata.attempt = 7;
    recs[3]!.phase = 'created';
    recs[3]!.pid = process.pid;
    recs[4]!.image = { ...recs[4]!.image, display: 'registry.test/other:1' };
    recs[5]!.createdAt = '1800000000000000000';
    delete recs[6]!.labels['nothing'];
    recs[7]!.labels = { replaced: 'yes' };
    await assertContainerListings();
    const after = new Map((await listContainers(ctx, { filter: null })).containers?.map((c) => [c.id, c]));
    for (const rec of recs.slice(0, 6).concat(recs[7]!)) assert.notEqual(after.get(rec.id), before.get(rec.id), `entry of ${rec.metadata.name} was not rebuilt`);
    assert.equal(after.get(recs[6]!.id), before.get(recs[6]!.id), 'deleting an absent label changes nothing');
  });

  it('an exit found by the listing itself shows in the encoded entry', async () => {
    const rec = [...state.containers.values()].find((r) => r.phase === 'created')!;
    const cached = (await listContainers(ctx, { filter: { id: rec.id, pod_sandbox_id: '', state: null, label_selector: {} } })).containers?.[0];
    assert.equal(cached?.state, 'CONTAINER_CREATED');
    await fs.writeFile(join(paths.exitDir, rec.id), '3');
    const response = await listContainers(ctx, { filter: null });
    assert.equal(rec.phase, 'exited');
    assert.ok(saved.includes(rec.id));
    const entry = response.containers?.find((c) => c.id === rec.id);
    assert.equal(entry?.state, 'CONTAINER_EXITED');
    assertSameEncoding('ListContainers', fast.ListContainers.responseSerialize(response), expectedContainers(null));
    await assertContainerListings();
  });

  it('sealed entries cannot be changed behind their bytes', async () => {
    const entry = (await listContainers(ctx, { filter: null })).containers![0]!;
    assert.ok(Object.isFrozen(entry) && Object.isFrozen(entry.labels) && Object.isFrozen(entry.metadata));
    assert.throws(() => {
      (entry.labels as Record<string, string>)['x'] = 'y';
    }, TypeError);
    assert.throws(() => {
      (entry as { state: string }).state = 'CONTAINER_EXITED';
    }, TypeError);
  });

  it('ListPodSandbox: the same bytes as the ordinary encoding, for every filter, listed again and again', async () => {
    const first = [...state.sandboxes.values()][0]!;
    const filter = (f: Partial<cri.PodSandboxFilter__Output>): cri.PodSandboxFilter__Output => ({ id: '', state: null, label_selector: {}, ...f });
    const filters = [
      null,
      filter({}),
      filter({ id: first.id.slice(0, 6) }),
      filter({ state: { state: 'SANDBOX_READY' } }),
      filter({ state: { state: 'SANDBOX_NOTREADY' } }),
      filter({ label_selector: { app: 'web' } }),
      filter({ label_selector: { app: 'web' }, state: { state: 'SANDBOX_NOTREADY' } }),
    ];
    const check = async (): Promise<void> => {
      for (const f of filters) {
        for (let round = 0; round < 2; round++) {
          const readiness = await Promise.all([...state.sandboxes.values()].map(async (rec) => ({ rec, ready: await sandboxIsReady(ctx, rec) })));
          const recs = readiness
            .filter(({ rec }) => !f?.id || rec.id.startsWith(f.id))
            .filter(({ rec }) => Object.entries(f?.label_selector ?? {}).every(([k, v]) => rec.labels[k] === v))
            .filter(({ ready }) => !f?.state || f.state.state === (ready ? 'SANDBOX_READY' : 'SANDBOX_NOTREADY'))
            .sort((a, b) => (BigInt(a.rec.createdAt) < BigInt(b.rec.createdAt) ? -1 : 1));
          const expected = ordinary.ListPodSandbox.responseSerialize({ items: recs.map(({ rec, ready }) => toCriSandbox(rec, ready)) });
          assertSameEncoding('ListPodSandbox', fast.ListPodSandbox.responseSerialize(await listPodSandbox(ctx, { filter: f })), expected);
        }
      }
    };
    await check();
    const ready = [...state.sandboxes.values()].find((rec) => rec.phase === 'ready')!;
    ready.phase = 'stopped';
    ready.labels['tier'] = 'front';
    await check();
  });
});

/** Records every path read from a value (and every object whose keys were listed) through proxies. */
function tracking<T extends object>(target: T, reads: Set<string>, listed: Set<string>, path: string[] = []): T {
  return new Proxy(target, {
    get(t, key, receiver) {
      const value: unknown = Reflect.get(t, key, receiver);
      if (typeof key !== 'string') return value;
      const at = [...path, key];
      if (typeof value === 'object' && value !== null) return tracking(value, reads, listed, at);
      if (typeof value !== 'function') reads.add(JSON.stringify(at));
      return value;
    },
    ownKeys(t) {
      listed.add(JSON.stringify(path));
      return Reflect.ownKeys(t);
    },
  });
}

function changedAt<T extends object>(value: T, path: string[], change: (old: unknown) => unknown): T {
  const copy = structuredClone(value);
  let parent = copy as Record<string, unknown>;
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string, unknown>;
  const last = path[path.length - 1]!;
  parent[last] = change(parent[last]);
  return copy;
}

/**
 * For an entry builder and its content function: every value of the record that the entry's
 * encoding reads, changed, and every map it lists, grown by a key, either leaves the encoding as it
 * was or changes the content too. Returns how many changes altered the encoding.
 */
function assertContentCoversEncoding<Rec extends object>(
  rec: Rec,
  encode: (rec: Rec) => Buffer,
  content: (rec: Rec) => readonly unknown[],
): number {
  const reads = new Set<string>();
  const listed = new Set<string>();
  encode(tracking(rec, reads, listed));
  const variants: { what: string; rec: Rec }[] = [];
  for (const read of reads) {
    const path = JSON.parse(read) as string[];
    variants.push({ what: `change of ${read}`, rec: changedAt(rec, path, (old) => (typeof old === 'number' ? old + 1 : typeof old === 'boolean' ? !old : `${String(old)}~`)) });
  }
  for (const list of listed) {
    const path = JSON.parse(list) as string[];
    if (path.length === 0) continue;
    variants.push({ what: `key added to ${list}`, rec: changedAt(rec, path, (old) => ({ ...(old as object), added: 'x' })) });
  }
  let altering = 0;
  for (const { what, rec: variant } of variants) {
    if (encode(variant).equals(encode(rec))) continue;
    altering++;
    assert.notDeepEqual(content(variant), content(rec), `${what} changes the entry but not its content`);
  }
  return altering;
}

describe('entry content', () => {
  it('covers every record value a ListContainers entry encodes', () => {
    for (const phase of ['created', 'running', 'exited', 'creating'] as const) {
      const rec = containerRecord(phase, '1700000000000000001', { labels: { app: 'web', 'io.kubernetes.pod.name': 'p' }, annotations: { note: 'n' } });
      const encode = (r: ContainerRecord): Buffer => ordinary.ListContainers.responseSerialize({ containers: [toCriContainer(r)] });
      const altering = assertContentCoversEncoding(rec, encode, criContainerContent);
      assert.ok(altering >= 12, `only ${altering} changes altered the entry`);
    }
  });

  it('covers every record value a ListPodSandbox entry encodes, and readiness', () => {
    const rec = sandboxRecord('ready', '1700000000000000001', { app: 'web' });
    for (const ready of [true, false]) {
      const encode = (r: SandboxRecord): Buffer => ordinary.ListPodSandbox.responseSerialize({ items: [toCriSandbox(r, ready)] });
      const altering = assertContentCoversEncoding(rec, encode, (r) => criSandboxContent(r, ready));
      assert.ok(altering >= 10, `only ${altering} changes altered the entry`);
    }
    assert.notDeepEqual(criSandboxContent(rec, true), criSandboxContent(rec, false));
  });

  it('tells maps apart by size, keys, values and order', () => {
    const of = (labels: Record<string, string>, annotations: Record<string, string>): EntryContent =>
      criContainerContent(containerRecord('created', '1', { id: 'x', sandboxId: 'y', metadata: { name: 'm', attempt: 0 }, labels, annotations }));
    const base = of({ a: '1' }, {});
    assert.ok(sameContent(base, of({ a: '1' }, {})));
    for (const other of [of({}, { a: '1' }), of({ a: '2' }, {}), of({ b: '1' }, {}), of({ a: '1', b: '' }, {}), of({}, {})]) assert.equal(sameContent(base, other), false);
    assert.equal(sameContent(of({ a: '1', b: '2' }, {}), of({ b: '2', a: '1' }, {})), false);
  });
});
