/**
 * The catalogue of images used by the end-to-end tests, built on demand and cached.
 *
 *   type TestImageName    'busybox' | 'busybox-zstd' | 'busybox-uncompressed' | 'multilayer' |
 *                         'multiarch' | 'withuser' | 'withusername' | 'big' | 'bench5' | 'pull5x20' |
 *                         'traversal-dotdot' | 'traversal-abs' | 'traversal-symlink' | 'docker-schema2' |
 *                         'fifo-passwd' | 'device-group' | 'device-node'
 *   TEST_IMAGE_NAMES: TestImageName[]
 *   getTestImage(name): Promise<ImageContent>
 *   pushTestImage(registry, name, { repo?, tag?, ...PushOptions }): Promise<PushedImage>
 *   pushSchema1Image(registry, { repo?, tag?, ...PushOptions }): Promise<PushedImage>
 *       a signed schema1 manifest over the busybox layer; needs startRegistry({ schema1: true })
 *   imageCacheDir(): string
 *   cachedLayer(key, entries, compression?, gzipLevel?): Promise<Layer>   a layer built once per cache
 *   loadOrBuild(key, build): Promise<T>      a descriptor built once per cache (its blobs checked)
 *   catalogueBlobDir(): string               the blob directory of the cache
 *   MULTILAYER, TRAVERSAL, BIG_FILE, BENCH5, MULTIARCH_PLATFORMS, DEFAULT_ENV, TEST_USER
 *       what the images contain, for assertions
 *
 * Built content lives in a blob directory shared by all test processes of a run:
 * $SKIFF_E2E_IMAGE_CACHE, or <tmpdir>/skiff-e2e-images-<fingerprint>, where the
 * fingerprint covers this library's code and the host busybox binary, so a change
 * to either builds afresh. The busybox layer is built once and shared by every
 * image that starts from it.
 */
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { mkdir, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { newTempPath } from './blob-dir.js';
import { BUSYBOX_PATH, busyboxRootfsEntries, TEST_USER } from './busybox-rootfs.js';
import { buildLayer, type Layer } from './layer-builder.js';
import { MediaTypes, type LayerCompression } from './media-types.js';
import { buildImage, buildIndex, type ContainerConfig, type Image, type ImageContent, type Platform } from './oci-image.js';
import { pushImage, registryUrl, type PushOptions } from './push.js';
import { pseudoRandomStream } from './random-data.js';
import { RegistryClient } from './registry-client.js';
import { buildSignedSchema1Manifest } from './schema1.js';
import type { TarEntry } from './tar-writer.js';

export { TEST_USER };

export const TEST_IMAGE_NAMES = [
  'busybox',
  'busybox-zstd',
  'busybox-uncompressed',
  'multilayer',
  'multiarch',
  'withuser',
  'withusername',
  'big',
  'bench5',
  'pull5x20',
  'traversal-dotdot',
  'traversal-abs',
  'traversal-symlink',
  'docker-schema2',
  'fifo-passwd',
  'device-group',
  'device-node',
] as const;

export type TestImageName = (typeof TEST_IMAGE_NAMES)[number];

export const DEFAULT_ENV = ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'];

const BUSYBOX_CONFIG: ContainerConfig = { Env: DEFAULT_ENV, Cmd: ['sh'] };

/** What the merged rootfs of `multilayer` looks like (paths from the rootfs root). */
export const MULTILAYER = {
  files: { '/data/b': 'b\n', '/data/dir/x': 'x\n', '/opaque/new1': 'new1\n' } as Record<string, string>,
  absent: ['/data/a', '/opaque/old1', '/data/.wh.a', '/opaque/.wh..wh..opq'],
  symlink: { path: '/data/link-to-b', target: 'b' },
  hardlink: { path: '/data/hardlink-to-b', target: '/data/b' },
  xattr: { path: '/data/xattr-file', name: 'user.skiff', value: 'test', content: 'has an xattr\n' },
  setuid: { path: '/data/setuid-file', mode: 0o4755, uid: 1234, gid: 1234, content: '#!/bin/sh\necho setuid\n' },
} as const;

/** The hostile entries of the traversal images, exactly as written in their tars. */
export const TRAVERSAL = {
  harmless: 'harmless-before-escape',
  dotdot: '../escape',
  abs: '/abs-escape',
  symlink: { link: 'evil', target: '/', file: 'evil/tmp/skiff-escape' },
  content: 'escaped\n',
} as const;

/** A character device an image brings along: the same numbers as the host's /dev/null. */
export const IMAGE_DEVICE_NODE = { path: '/imagedev', major: 1, minor: 3 } as const;

export const BIG_FILE = { path: '/big/random.bin', size: 100 * 1024 * 1024, seed: 'skiff-big-layer' } as const;

/** bench5: the busybox layer plus four incompressible layers. */
export const BENCH5 = {
  files: [1, 2, 3, 4].map((i) => ({ path: `/bench/layer${i + 1}.bin`, size: 25 * 1024 * 1024, seed: `skiff-bench5-${i + 1}` })),
} as const;

/** pull5x20: the busybox layer plus five incompressible layers of 20 MiB. */
export const PULL5X20 = {
  files: [1, 2, 3, 4, 5].map((i) => ({ path: `/pull/layer${i}.bin`, size: 20 * 1024 * 1024, seed: `skiff-pull5x20-${i}` })),
} as const;

export const MULTIARCH_PLATFORMS: Platform[] = [
  { architecture: 'amd64', os: 'linux' },
  { architecture: 'arm64', os: 'linux', variant: 'v8' },
  { architecture: 'arm', os: 'linux', variant: 'v7' },
];

// ---------------------------------------------------------------- cache location

const LIB_DIR = dirname(fileURLToPath(import.meta.url));

/** The modules whose code decides the bytes of the built images. */
const CONTENT_MODULES = [
  'blob-dir.js',
  'busybox-rootfs.js',
  'layer-builder.js',
  'media-types.js',
  'oci-image.js',
  'random-data.js',
  'schema1.js',
  'sha256.js',
  'tar-writer.js',
  'image-catalogue.js',
  'debian-rootfs.js',
  'conformance-images.js',
  'critest-images.js',
];

function fingerprint(): string {
  const hash = createHash('sha256');
  for (const file of CONTENT_MODULES) hash.update(file).update(readFileSync(join(LIB_DIR, file)));
  const busybox = statSync(BUSYBOX_PATH);
  hash.update(`${busybox.size}:${busybox.mtimeMs}`);
  return hash.digest('hex').slice(0, 16);
}

let cacheDir: string | undefined;

export function imageCacheDir(): string {
  cacheDir ??= process.env.SKIFF_E2E_IMAGE_CACHE ?? join(tmpdir(), `skiff-e2e-images-${fingerprint()}`);
  return cacheDir;
}

export function catalogueBlobDir(): string {
  return join(imageCacheDir(), 'blobs');
}

const blobDir = catalogueBlobDir;

/** Removes caches of other library versions that nobody has touched for a day. */
async function pruneStaleCaches(): Promise<void> {
  if (process.env.SKIFF_E2E_IMAGE_CACHE !== undefined) return;
  const current = imageCacheDir();
  const dayAgo = Date.now() - 24 * 3600 * 1000;
  for (const name of await readdir(tmpdir()).catch(() => [] as string[])) {
    const path = join(tmpdir(), name);
    if (!name.startsWith('skiff-e2e-images-') || path === current) continue;
    const info = await stat(path).catch(() => undefined);
    if (info && info.mtimeMs < dayAgo) await rm(path, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------- layers

const layerMemo = new Map<string, Promise<Layer>>();

/** Builds a layer once per process (and once per cache, via the stored descriptor). */
export function cachedLayer(
  key: string,
  entries: () => Iterable<TarEntry>,
  compression: LayerCompression = 'gzip',
  gzipLevel?: number,
): Promise<Layer> {
  const memoKey = `${key}.${compression}`;
  let promise = layerMemo.get(memoKey);
  if (promise === undefined) {
    promise = loadOrBuild(`layer-${memoKey}`, () => buildLayer(entries(), { blobDir: blobDir(), compression, gzipLevel }));
    layerMemo.set(memoKey, promise);
  }
  return promise;
}

function busyboxLayer(compression: LayerCompression = 'gzip'): Promise<Layer> {
  return cachedLayer('busybox', busyboxRootfsEntries, compression);
}

function randomFileLayer(key: string, path: string, size: number, seed: string): Promise<Layer> {
  const relative = path.replace(/^\/+/, '');
  const parents = relative.split('/').slice(0, -1);
  return cachedLayer(
    key,
    (): TarEntry[] => [
      ...parents.map((_, i): TarEntry => ({ type: 'dir', name: parents.slice(0, i + 1).join('/') })),
      { type: 'file', name: relative, mode: 0o644, content: { size, open: () => pseudoRandomStream(seed, size) } },
    ],
    'gzip',
    1,
  );
}

// ---------------------------------------------------------------- descriptor cache

/** Every blob file a cached descriptor points to must still exist. */
async function blobsPresent(value: unknown): Promise<boolean> {
  const paths: string[] = [];
  JSON.stringify(value, (key, v: unknown) => {
    if (key === 'path' && typeof v === 'string') paths.push(v);
    return v;
  });
  for (const path of paths) if (!(await stat(path).catch(() => undefined))) return false;
  return true;
}

export async function loadOrBuild<T>(key: string, build: () => Promise<T>): Promise<T> {
  const file = join(imageCacheDir(), 'descriptors', `${key}.json`);
  try {
    const cached = JSON.parse(await readFile(file, 'utf8')) as T;
    if (await blobsPresent(cached)) return cached;
  } catch {
    // not cached yet
  }
  const value = await build();
  await mkdir(dirname(file), { recursive: true });
  const temp = newTempPath(dirname(file));
  await writeFile(temp, JSON.stringify(value));
  await rename(temp, file);
  return value;
}

// ---------------------------------------------------------------- image definitions

function file(name: string, content: string, extra: Partial<TarEntry> = {}): TarEntry {
  return { type: 'file', name, content, mode: 0o644, ...extra } as TarEntry;
}

function dir(name: string): TarEntry {
  return { type: 'dir', name, mode: 0o755 };
}

const strip = (path: string): string => path.replace(/^\/+/, '');

function multilayerEntries2(): TarEntry[] {
  return [
    dir('data'),
    file('data/a', 'a\n'),
    file('data/b', 'b\n'),
    dir('data/dir'),
    file('data/dir/x', 'x\n'),
    { type: 'symlink', name: strip(MULTILAYER.symlink.path), target: MULTILAYER.symlink.target },
    { type: 'hardlink', name: strip(MULTILAYER.hardlink.path), target: strip(MULTILAYER.hardlink.target) },
    file(strip(MULTILAYER.xattr.path), MULTILAYER.xattr.content, {
      xattrs: { [MULTILAYER.xattr.name]: MULTILAYER.xattr.value },
    }),
    file(strip(MULTILAYER.setuid.path), MULTILAYER.setuid.content, {
      mode: MULTILAYER.setuid.mode,
      uid: MULTILAYER.setuid.uid,
      gid: MULTILAYER.setuid.gid,
    }),
    dir('opaque'),
    file('opaque/old1', 'old1\n'),
  ];
}

function multilayerEntries3(): TarEntry[] {
  return [dir('data'), file('data/.wh.a', ''), dir('opaque'), file('opaque/.wh..wh..opq', ''), file('opaque/new1', 'new1\n')];
}

function traversalEntries(kind: 'dotdot' | 'abs' | 'symlink'): TarEntry[] {
  const entries: TarEntry[] = [file(TRAVERSAL.harmless, 'harmless\n')];
  if (kind === 'dotdot') entries.push(file(TRAVERSAL.dotdot, TRAVERSAL.content));
  if (kind === 'abs') entries.push(file(TRAVERSAL.abs, TRAVERSAL.content));
  if (kind === 'symlink') {
    entries.push({ type: 'symlink', name: TRAVERSAL.symlink.link, target: TRAVERSAL.symlink.target });
    entries.push(file(TRAVERSAL.symlink.file, TRAVERSAL.content));
  }
  return entries;
}

function platformLayer(platform: Platform): Promise<Layer> {
  const text = [platform.os, platform.architecture, platform.variant].filter(Boolean).join('/');
  return cachedLayer(`platform-${text.replace(/\//g, '-')}`, () => [file('platform', `${text}\n`)]);
}

async function busyboxImage(extra: Partial<ContainerConfig> = {}, compression: LayerCompression = 'gzip'): Promise<Image> {
  return buildImage({
    blobDir: blobDir(),
    layers: [await busyboxLayer(compression)],
    config: { ...BUSYBOX_CONFIG, ...extra },
    layerComments: ['busybox userland'],
  });
}

/** busybox with one more layer on top, running as the test user so that its passwd and group are read. */
async function busyboxWith(key: string, entries: () => TarEntry[]): Promise<Image> {
  return buildImage({
    blobDir: blobDir(),
    layers: [await busyboxLayer(), await cachedLayer(key, entries)],
    config: { ...BUSYBOX_CONFIG, User: TEST_USER.name },
  });
}

const definitions: Record<TestImageName, () => Promise<ImageContent>> = {
  busybox: () => busyboxImage(),
  'busybox-zstd': () => busyboxImage({}, 'zstd'),
  'busybox-uncompressed': () => busyboxImage({}, 'none'),
  withuser: () => busyboxImage({ User: String(TEST_USER.uid) }),
  withusername: () => busyboxImage({ User: TEST_USER.name }),
  'docker-schema2': async () =>
    buildImage({ blobDir: blobDir(), format: 'docker', layers: [await busyboxLayer()], config: BUSYBOX_CONFIG }),
  multilayer: async () =>
    buildImage({
      blobDir: blobDir(),
      layers: [
        await busyboxLayer(),
        await cachedLayer('multilayer-2', multilayerEntries2),
        await cachedLayer('multilayer-3', multilayerEntries3),
      ],
      config: BUSYBOX_CONFIG,
      layerComments: ['busybox userland', 'data and opaque dirs', 'whiteout, opaque dir'],
    }),
  multiarch: async () => {
    const [amd64, ...others] = MULTIARCH_PLATFORMS as [Platform, ...Platform[]];
    const images = [
      await buildImage({ blobDir: blobDir(), platform: amd64, layers: [await busyboxLayer()], config: BUSYBOX_CONFIG }),
    ];
    for (const platform of others) {
      images.push(await buildImage({ blobDir: blobDir(), platform, layers: [await platformLayer(platform)], config: BUSYBOX_CONFIG }));
    }
    return buildIndex(images, { blobDir: blobDir() });
  },
  big: async () =>
    buildImage({
      blobDir: blobDir(),
      layers: [await busyboxLayer(), await randomFileLayer('big', BIG_FILE.path, BIG_FILE.size, BIG_FILE.seed)],
      config: BUSYBOX_CONFIG,
    }),
  bench5: async () => {
    const layers = [await busyboxLayer()];
    for (const [i, spec] of BENCH5.files.entries()) {
      layers.push(await randomFileLayer(`bench5-${i + 2}`, spec.path, spec.size, spec.seed));
    }
    return buildImage({ blobDir: blobDir(), layers, config: BUSYBOX_CONFIG });
  },
  pull5x20: async () => {
    const layers = [await busyboxLayer()];
    for (const [i, spec] of PULL5X20.files.entries()) layers.push(await randomFileLayer(`pull5x20-${i + 1}`, spec.path, spec.size, spec.seed));
    return buildImage({ blobDir: blobDir(), layers, config: BUSYBOX_CONFIG });
  },
  'fifo-passwd': () => busyboxWith('fifo-passwd', () => [{ type: 'fifo', name: 'etc/passwd', mode: 0o644 }]),
  'device-group': () => busyboxWith('device-group', () => [{ type: 'char', name: 'etc/group', mode: 0o644, major: 1, minor: 5 }]),
  'device-node': () =>
    busyboxWith('device-node', () => [
      { type: 'char', name: IMAGE_DEVICE_NODE.path.slice(1), mode: 0o666, major: IMAGE_DEVICE_NODE.major, minor: IMAGE_DEVICE_NODE.minor },
    ]),
  'traversal-dotdot': async () =>
    buildImage({ blobDir: blobDir(), layers: [await cachedLayer('traversal-dotdot', () => traversalEntries('dotdot'))], config: BUSYBOX_CONFIG }),
  'traversal-abs': async () =>
    buildImage({ blobDir: blobDir(), layers: [await cachedLayer('traversal-abs', () => traversalEntries('abs'))], config: BUSYBOX_CONFIG }),
  'traversal-symlink': async () =>
    buildImage({ blobDir: blobDir(), layers: [await cachedLayer('traversal-symlink', () => traversalEntries('symlink'))], config: BUSYBOX_CONFIG }),
};

// ---------------------------------------------------------------- public API

const imageMemo = new Map<TestImageName, Promise<ImageContent>>();
let pruned = false;

export function getTestImage(name: TestImageName): Promise<ImageContent> {
  if (!pruned) {
    pruned = true;
    void pruneStaleCaches().catch(() => undefined);
  }
  let promise = imageMemo.get(name);
  if (promise === undefined) {
    promise = loadOrBuild(`image-${name}`, definitions[name]);
    promise.catch(() => imageMemo.delete(name));
    imageMemo.set(name, promise);
  }
  return promise;
}

export interface PushedImage {
  repo: string;
  tag: string;
  digest: string;
  /** "<host>/<repo>:<tag>" as a CRI client would name it. */
  reference: string;
  /** "<host>/<repo>@<digest>". */
  digestReference: string;
}

export interface PushTestImageOptions extends PushOptions {
  repo?: string;
  tag?: string;
}

function hostOf(registry: string | { url: string }): string {
  return new URL(registryUrl(registry)).host;
}

function pushed(registry: string | { url: string }, repo: string, tag: string, digest: string): PushedImage {
  const host = hostOf(registry);
  return { repo, tag, digest, reference: `${host}/${repo}:${tag}`, digestReference: `${host}/${repo}@${digest}` };
}

export async function pushTestImage(
  registry: string | { url: string },
  name: TestImageName,
  options: PushTestImageOptions = {},
): Promise<PushedImage> {
  const repo = options.repo ?? `skiff/${name}`;
  const tag = options.tag ?? 'latest';
  const digest = await pushImage(registry, repo, tag, await getTestImage(name), options);
  return pushed(registry, repo, tag, digest);
}

export async function pushSchema1Image(
  registry: string | { url: string },
  options: PushTestImageOptions = {},
): Promise<PushedImage> {
  const repo = options.repo ?? 'skiff/schema1';
  const tag = options.tag ?? 'latest';
  const layer = await busyboxLayer();
  const client = options.client ?? new RegistryClient(registryUrl(registry), { credentials: options.credentials });
  await client.uploadBlob(repo, layer, { chunkSize: options.chunkSize });
  const manifest = buildSignedSchema1Manifest({ name: repo, tag, layerDigests: [layer.digest], config: BUSYBOX_CONFIG });
  const digest = await client.putManifest(repo, tag, manifest, MediaTypes.dockerSchema1Signed);
  return pushed(registry, repo, tag, digest);
}
