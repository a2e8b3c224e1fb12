/**
 * The images the Kubernetes node conformance suite (e2e_node.test, NodeConformance specs) runs,
 * built offline under the exact names and tags the suite asks for, each doing what its specs expect
 * of it: agnhost from the agnhost binary scripts/kube-tools.sh builds, busybox from the host's
 * busybox-static, the others from Debian packages (unpacked with their dependencies) on top of the
 * busybox userland, and nonewprivs' nnp and the sample device plugin built from the Kubernetes
 * module's own source.
 *
 *   CONFORMANCE_IMAGES: readonly ConformanceImage[]   { name, reference, repository, tag, registry, listed }
 *   interface ConformanceSources { agnhost, kubernetesModuleDir? }
 *   getConformanceImage(name, sources): Promise<ImageContent>
 *   pushConformanceImages(registry, sources): Promise<void>
 *       each image into `registry` as <repository>:<tag>, so a mirror of its registry serves it
 *   conformanceRegistriesConf(mirrorHost): string
 *       registries.conf with `mirrorHost` (plain HTTP) as the mirror of every registry named here
 *
 * What each stands in for, and how it behaves:
 *   busybox     the busybox userland (busybox built from its upstream source, as the suite's image has it), every applet
 *               in /bin as well, CMD sh, the accounts of the busybox image
 *   agnhost     /agnhost (ENTRYPOINT, CMD pause), /agnhost-2 a link to it, /uploads, porter's
 *               /localhost.crt and /localhost.key from the module's source, the accounts
 *               user-defined-in-image (1000) in group-defined-in-image (50000), ports 80 8080 8081
 *               9376 5000, over the busybox userland (sh and the usual commands) and Debian's bash and
 *               curl; /var/registry holds the pause image below as pause:testing, for
 *               fake-registry-server
 *   nginx       Debian's nginx serving /usr/share/nginx/html on port 80 in the foreground, logs on
 *               stdout/stderr, stop signal SIGQUIT
 *   perl        Debian's perl-base
 *   nonewprivs  /usr/local/bin/nnp, setuid root, prints "Effective uid: <euid>"
 *   nonroot     the busybox userland running as uid 1234
 *   ipc-utils   Debian's util-linux (ipcmk, ipcs)
 *   glibc-dns-testing  Debian's hostname (glibc's resolver: `hostname -f` reads /etc/hosts)
 *   sample-device-plugin  /sampledeviceplugin built from the module's source (ENTRYPOINT)
 *   pause       catatonit in pause mode as /pause, user 65535
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { createHash } from 'node:crypto';
import { busyboxApplets, busyboxRootfsEntries, type RootfsAccounts } from './busybox-rootfs.js';
import { DEBIAN_CACHE_DIR } from './debian-binary.js';
import { debianRootfs, directoryEntries, DOC_DIRS } from './debian-rootfs.js';
import { cachedLayer, catalogueBlobDir, loadOrBuild } from './image-catalogue.js';
import type { Layer } from './layer-builder.js';
import { buildImage, type ContainerConfig, type Image, type ImageContent } from './oci-image.js';
import { pushImage } from './push.js';
import { RegistryClient } from './registry-client.js';
import { REPO_ROOT } from './skiff-instance.js';
import type { TarEntry } from './tar-writer.js';

const run = promisify(execFile);

export type ConformanceImageName =
  | 'agnhost'
  | 'agnhost-prev'
  | 'busybox'
  | 'nginx'
  | 'perl'
  | 'nonewprivs'
  | 'nonroot'
  | 'ipc-utils'
  | 'glibc-dns-testing'
  | 'sample-device-plugin'
  | 'pause';

export interface ConformanceImage {
  name: ConformanceImageName;
  /** The reference the suite uses, e.g. registry.k8s.io/e2e-test-images/busybox:1.37.0-2. */
  reference: string;
  registry: string;
  /** The repository inside its registry, e.g. e2e-test-images/busybox. */
  repository: string;
  tag: string;
  /** Whether `e2e_node.test --list-images` names it (the device plugin's comes from a manifest). */
  listed: boolean;
}

const E2E = 'registry.k8s.io/e2e-test-images';

function image(name: ConformanceImageName, reference: string, listed = true): ConformanceImage {
  const slash = reference.indexOf('/');
  const colon = reference.lastIndexOf(':');
  return {
    name,
    reference,
    listed,
    registry: reference.slice(0, slash),
    repository: reference.slice(slash + 1, colon),
    tag: reference.slice(colon + 1),
  };
}

/** Names and tags as test/utils/image/manifest.go of Kubernetes v1.37 has them. */
export const CONFORMANCE_IMAGES: readonly ConformanceImage[] = [
  image('agnhost', `${E2E}/agnhost:2.66.1`),
  image('agnhost-prev', `${E2E}/agnhost:2.55`),
  image('busybox', `${E2E}/busybox:1.37.0-2`),
  image('nginx', `${E2E}/nginx:1.27.0-2`),
  image('perl', `${E2E}/perl:5.26`),
  image('nonewprivs', `${E2E}/nonewprivs:1.4`),
  image('nonroot', `${E2E}/nonroot:1.5`),
  image('ipc-utils', `${E2E}/ipc-utils:1.4`),
  image('glibc-dns-testing', `${E2E}/glibc-dns-testing:2.1.1`),
  image('pause', 'registry.k8s.io/pause:3.10.2'),
  // The device plugin specs take the image from their DaemonSet manifest, not the image list.
  image('sample-device-plugin', `${E2E}/sample-device-plugin:1.8.0`, false),
];

export interface ConformanceSources {
  /** The agnhost binary (static) that scripts/kube-tools.sh built. */
  agnhost: string;
  /** The Go module that pins Kubernetes (default tools/kubernetes), for the test images' sources. */
  kubernetesModuleDir?: string;
}

// ---------------------------------------------------------------- accounts

export const BUSYBOX_ACCOUNTS: RootfsAccounts = {
  passwd: [
    'root:x:0:0:root:/root:/bin/sh',
    'daemon:x:1:1:daemon:/usr/sbin:/bin/false',
    'bin:x:2:2:bin:/bin:/bin/false',
    'sys:x:3:3:sys:/dev:/bin/false',
    'sync:x:4:100:sync:/bin:/bin/sync',
    'mail:x:8:8:mail:/var/spool/mail:/bin/false',
    'www-data:x:33:33:www-data:/var/www:/bin/false',
    'operator:x:37:37:Operator:/var:/bin/false',
    'nobody:x:65534:65534:nobody:/home:/bin/false',
    '',
  ].join('\n'),
  group: [
    'root:x:0:',
    'daemon:x:1:',
    'bin:x:2:',
    'sys:x:3:',
    'adm:x:4:',
    'tty:x:5:',
    'disk:x:6:',
    'lp:x:7:',
    'mail:x:8:',
    'kmem:x:9:',
    'wheel:x:10:root',
    'cdrom:x:11:',
    'dialout:x:18:',
    'floppy:x:19:',
    'video:x:28:',
    'audio:x:29:',
    'tape:x:32:',
    'www-data:x:33:',
    'operator:x:37:',
    'utmp:x:43:',
    'staff:x:50:',
    'users:x:100:',
    'nogroup:x:65534:',
    '',
  ].join('\n'),
  homes: [],
};

/** agnhost's own accounts, for the SupplementalGroupsPolicy specs: 1000 is in group 50000 by /etc/group. */
const AGNHOST_ACCOUNTS = {
  passwd: `${BUSYBOX_ACCOUNTS.passwd}user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh\n`,
  group: `${BUSYBOX_ACCOUNTS.group}user-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n`,
};

// ---------------------------------------------------------------- layers

const DEFAULT_PATH = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * The images' busybox, built static with busybox's default configuration from the upstream source
 * of the installed busybox-static's version (Debian's archive, checked against its digest), as the
 * suite's busybox image has it. Debian's build differs in two ways the specs see: it leaves out
 * nmeter (the container lifecycle specs' millisecond timestamps), and its shell drops environment
 * variables whose names are not shell names (the ConfigMap and Secret specs expect `sh -c env` to
 * print `data-1=value-1`).
 */
const BUSYBOX_SOURCE_SHA256: Record<string, string> = {
  '1.35.0': 'faeeb244c35a348a334f4a59e44626ee870fb07b6884d68c10ae8bc19f83a694',
};

async function upstreamBusybox(): Promise<string> {
  const version = (await run('dpkg-query', ['-W', '-f', '${source:Upstream-Version}', 'busybox-static'])).stdout.trim();
  const digest = BUSYBOX_SOURCE_SHA256[version];
  if (digest === undefined) throw new Error(`no digest known for the busybox ${version} source: add it to BUSYBOX_SOURCE_SHA256`);
  const binary = join(DEBIAN_CACHE_DIR, `busybox-upstream-${version}`, 'busybox');
  if (existsSync(binary)) return binary;
  await mkdir(DEBIAN_CACHE_DIR, { recursive: true });
  const work = await mkdtemp(join(DEBIAN_CACHE_DIR, 'busybox-source-'));
  try {
    const url = `http://deb.debian.org/debian/pool/main/b/busybox/busybox_${version}.orig.tar.bz2`;
    const response = await fetch(url, { signal: AbortSignal.timeout(300_000) });
    if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
    const tarball = Buffer.from(await response.arrayBuffer());
    const actual = createHash('sha256').update(tarball).digest('hex');
    if (actual !== digest) throw new Error(`${url}: sha256 ${actual}, expected ${digest}`);
    await writeFile(join(work, 'source.tar.bz2'), tarball);
    await run('tar', ['-xjf', 'source.tar.bz2', '--strip-components=1'], { cwd: work });
    await run('make', ['defconfig'], { cwd: work, maxBuffer: 16 * 1024 * 1024 });
    const config = (await readFile(join(work, '.config'), 'utf8')).replace('# CONFIG_STATIC is not set', 'CONFIG_STATIC=y');
    await writeFile(join(work, '.config'), config);
    await run('sh', ['-c', 'yes "" | make oldconfig'], { cwd: work, maxBuffer: 16 * 1024 * 1024 });
    await run('make', ['-j2', 'busybox'], { cwd: work, maxBuffer: 64 * 1024 * 1024, timeout: 1_200_000 });
    await mkdir(join(binary, '..'), { recursive: true });
    await copyFile(join(work, 'busybox'), `${binary}.tmp`);
    await rename(`${binary}.tmp`, binary);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return binary;
}

/** Every applet in /bin too, as the busybox image has them (the sysctl specs run /bin/sysctl). */
function appletsInBin(busybox: string): TarEntry[] {
  const inBin = new Set(busyboxApplets(busybox).filter((applet) => applet.startsWith('bin/')).map((applet) => applet.slice(4)));
  const links: TarEntry[] = [];
  for (const applet of busyboxApplets(busybox)) {
    const name = applet.split('/').pop()!;
    if (inBin.has(name)) continue;
    inBin.add(name);
    links.push({ type: 'hardlink', name: `bin/${name}`, target: 'bin/busybox', mode: 0o755 });
  }
  return links;
}

/** The busybox userland with busybox's image's accounts and its applets in /bin. */
export async function userland(): Promise<Layer> {
  const busybox = await upstreamBusybox();
  return cachedLayer(`conformance-busybox-${fileKey(busybox)}`, () => [...busyboxRootfsEntries(BUSYBOX_ACCOUNTS, busybox), ...appletsInBin(busybox)]);
}

export function file(name: string, content: string, mode = 0o644): TarEntry {
  return { type: 'file', name, content, mode };
}

/** A file of the host, as `name` in a layer. */
function hostFile(name: string, path: string, mode = 0o644): TarEntry {
  return { type: 'file', name, mode, content: { path, size: statSync(path).size } };
}

export function dir(name: string, mode = 0o755): TarEntry {
  return { type: 'dir', name, mode };
}

/** A key that changes whenever the file does. */
function fileKey(path: string): string {
  const info = statSync(path);
  return `${info.size}-${Math.floor(info.mtimeMs)}`;
}

export async function debianLayer(packages: string[]): Promise<Layer> {
  const root = await debianRootfs(packages);
  return cachedLayer(`conformance-${basename(root)}`, () => directoryEntries(root, { exclude: DOC_DIRS }));
}

/** The directory of the pinned k8s.io/kubernetes module's source (Go's module cache). */
async function kubernetesSource(moduleDir: string): Promise<string> {
  const { stdout } = await run(GO, ['list', '-m', '-f', '{{.Dir}}', 'k8s.io/kubernetes'], {
    cwd: moduleDir,
    env: { ...process.env, GOFLAGS: '-mod=readonly' },
    timeout: 300_000,
  });
  return stdout.trim();
}

/** agnhost as its image has it, with porter's certificate and key (netexec serves HTTPS with them). */
async function agnhostLayer(agnhost: string, moduleDir: string): Promise<Layer> {
  const porter = join(await kubernetesSource(moduleDir), 'test/images/agnhost/porter');
  return cachedLayer(`conformance-agnhost-${fileKey(agnhost)}-${fileKey(join(porter, 'localhost.crt'))}`, () => [
    hostFile('agnhost', agnhost, 0o755),
    hostFile('localhost.crt', join(porter, 'localhost.crt')),
    hostFile('localhost.key', join(porter, 'localhost.key')),
    { type: 'symlink', name: 'agnhost-2', target: 'agnhost' },
    dir('uploads'),
    dir('etc'),
    file('etc/passwd', AGNHOST_ACCOUNTS.passwd),
    file('etc/group', AGNHOST_ACCOUNTS.group),
    dir('home'),
    { type: 'dir', name: 'home/user-defined-in-image', mode: 0o755, uid: 1000, gid: 1000 },
  ]);
}

const nginxConf = (port: number): string => `worker_processes 1;
error_log /dev/stderr notice;
pid /run/nginx.pid;
events {
  worker_connections 1024;
}
http {
  include /etc/nginx/mime.types;
  default_type application/octet-stream;
  access_log /dev/stdout;
  client_body_temp_path /tmp/nginx-client-body;
  proxy_temp_path /tmp/nginx-proxy;
  fastcgi_temp_path /tmp/nginx-fastcgi;
  uwsgi_temp_path /tmp/nginx-uwsgi;
  scgi_temp_path /tmp/nginx-scgi;
  server {
    listen ${port};
    server_name localhost;
    location / {
      root /usr/share/nginx/html;
      index index.html;
    }
  }
}
`;

const NGINX_INDEX = '<!DOCTYPE html>\n<html><head><title>Welcome to nginx!</title></head>\n<body><h1>Welcome to nginx!</h1></body></html>\n';

/** nginx's configuration, serving the page on `port`. */
export function nginxConfigLayer(port = 80): Promise<Layer> {
  return cachedLayer(port === 80 ? 'conformance-nginx-config' : `conformance-nginx-config-${port}`, () => [
    dir('etc'),
    dir('etc/nginx'),
    file('etc/nginx/nginx.conf', nginxConf(port)),
    dir('run'),
    dir('usr'),
    dir('usr/share'),
    dir('usr/share/nginx'),
    dir('usr/share/nginx/html'),
    file('usr/share/nginx/html/index.html', NGINX_INDEX),
    dir('var'),
    // As Debian's base-files has it: the pid file is looked for at /var/run/nginx.pid too.
    { type: 'symlink', name: 'var/run', target: '/run' },
    dir('var/log'),
    dir('var/log/nginx'),
    dir('var/lib'),
    dir('var/lib/nginx'),
  ]);
}

/** glibc looks names up only as nsswitch.conf says; without one it asks DNS before /etc/hosts. */
function nsswitchLayer(): Promise<Layer> {
  return cachedLayer('conformance-nsswitch', () => [
    dir('etc'),
    file('etc/nsswitch.conf', 'passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\n'),
    file('etc/host.conf', 'multi on\n'),
  ]);
}

const GO = existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : 'go';

/** A program of the Kubernetes test images (test/images/<dir>), built at the version the module pins. */
async function moduleProgram(moduleDir: string, dir: string): Promise<string> {
  const goMod = readFileSync(join(moduleDir, 'go.mod'), 'utf8');
  const version = /^\s*k8s\.io\/kubernetes (v\S+)/m.exec(goMod)?.[1];
  if (version === undefined) throw new Error(`${moduleDir}/go.mod requires no k8s.io/kubernetes`);
  const binary = join(DEBIAN_CACHE_DIR, `${dir}-${version}`, dir);
  if (existsSync(binary)) return binary;
  await mkdir(join(binary, '..'), { recursive: true });
  const temp = `${binary}.tmp-${process.pid}`;
  try {
    await run(GO, ['build', '-trimpath', '-ldflags=-s -w', '-o', temp, `k8s.io/kubernetes/test/images/${dir}`], {
      cwd: moduleDir,
      env: { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-buildvcs=false -mod=readonly' },
      timeout: 600_000,
    });
    await rename(temp, binary);
  } finally {
    await rm(temp, { force: true });
  }
  return binary;
}

async function nnpLayer(moduleDir: string): Promise<Layer> {
  const nnp = await moduleProgram(moduleDir, 'nonewprivs');
  return cachedLayer(`conformance-nnp-${fileKey(nnp)}`, () => [
    dir('usr'),
    dir('usr/local'),
    dir('usr/local/bin'),
    hostFile('usr/local/bin/nnp', nnp, 0o4755),
  ]);
}

async function devicePluginLayer(moduleDir: string): Promise<Layer> {
  const plugin = await moduleProgram(moduleDir, 'sample-device-plugin');
  return cachedLayer(`conformance-sample-device-plugin-${fileKey(plugin)}`, () => [hostFile('sampledeviceplugin', plugin, 0o755)]);
}

const CATATONIT = '/usr/bin/catatonit';

function pauseLayer(): Promise<Layer> {
  return cachedLayer(`conformance-pause-${fileKey(CATATONIT)}`, () => [
    hostFile('pause', CATATONIT, 0o755),
  ]);
}

/**
 * agnhost's fake-registry-server serves /var/registry, which agnhost's image fills with pause as
 * `pause:testing` (the private-registry specs pull it): a file per tag holding the manifest's
 * digest, and each manifest and blob at `<algorithm>/<first two hex digits>/<hex>/data`.
 */
async function fakeRegistryLayer(pause: Image): Promise<Layer> {
  const at = (dir: string, digest: string): string => {
    const [algorithm, hex] = digest.split(':') as [string, string];
    return `${dir}/${algorithm}/${hex.slice(0, 2)}/${hex}/data`;
  };
  const root = 'var/registry/pause';
  const entries: TarEntry[] = [file(`${root}/manifests/testing`, `${pause.manifest.digest}\n`)];
  entries.push({ type: 'file', name: at(`${root}/manifests`, pause.manifest.digest), mode: 0o644, content: { path: pause.manifest.path } });
  for (const blob of [pause.config, ...pause.layers]) entries.push({ type: 'file', name: at(`${root}/blobs`, blob.digest), mode: 0o644, content: { path: blob.path } });
  const dirs = new Set<string>();
  for (const entry of entries) for (let d = dirname(entry.name); d !== '.'; d = dirname(d)) dirs.add(d);
  return cachedLayer(`conformance-fake-registry-${pause.manifest.digest.slice(7, 23)}`, () => [...[...dirs].sort().map((d) => dir(d)), ...entries]);
}

// ---------------------------------------------------------------- images

const AGNHOST_PORTS = Object.fromEntries(['80', '8080', '8081', '9376', '5000'].map((port) => [`${port}/tcp`, {}]));

export async function imageOf(layers: Promise<Layer>[], config: ContainerConfig): Promise<Image> {
  return buildImage({ blobDir: catalogueBlobDir(), layers: await Promise.all(layers), config: { Env: [DEFAULT_PATH], ...config } });
}

/** /usr/local/bin/nnp (setuid root, prints its effective uid) over the busybox userland. */
export function nonewprivsImage(moduleDir = join(REPO_ROOT, 'tools/kubernetes')): Promise<Image> {
  return imageOf([userland(), nnpLayer(moduleDir)], { Cmd: ['nnp'] });
}

/** Debian's nginx serving its page on `port` in the foreground. */
export function nginxImage(port: number): Promise<Image> {
  return imageOf([userland(), debianLayer(['nginx']), nginxConfigLayer(port)], {
    Cmd: ['nginx', '-g', 'daemon off;'],
    ExposedPorts: { [`${port}/tcp`]: {} },
    StopSignal: 'SIGQUIT',
  });
}

export function pauseImage(): Promise<Image> {
  return imageOf([pauseLayer()], { Entrypoint: ['/pause', '-P'], User: '65535:65535' });
}

function definition(name: ConformanceImageName, sources: ConformanceSources): () => Promise<ImageContent> {
  const moduleDir = sources.kubernetesModuleDir ?? join(REPO_ROOT, 'tools/kubernetes');
  switch (name) {
    case 'agnhost':
    case 'agnhost-prev':
      return () =>
        imageOf([userland(), debianLayer(['bash', 'curl']), agnhostLayer(sources.agnhost, moduleDir), pauseImage().then(fakeRegistryLayer)], {
          Entrypoint: ['/agnhost'],
          Cmd: ['pause'],
          ExposedPorts: AGNHOST_PORTS,
        });
    case 'busybox':
      return () => imageOf([userland()], { Cmd: ['sh'] });
    case 'nginx':
      return () => nginxImage(80);
    case 'perl':
      return () => imageOf([userland(), debianLayer(['perl-base'])], { Cmd: ['perl', '-de0'] });
    case 'nonewprivs':
      return () => nonewprivsImage(moduleDir);
    case 'nonroot':
      return () => imageOf([userland()], { Cmd: ['sh'], User: '1234' });
    case 'ipc-utils':
      return () => imageOf([userland(), debianLayer(['util-linux'])], { Cmd: ['sh'] });
    case 'glibc-dns-testing':
      return () => imageOf([userland(), debianLayer(['hostname']), nsswitchLayer()], { Cmd: ['sh'] });
    case 'sample-device-plugin':
      return () => imageOf([userland(), devicePluginLayer(moduleDir)], { Entrypoint: ['/sampledeviceplugin', '-alsologtostderr'] });
    case 'pause':
      return pauseImage;
  }
}

export function getConformanceImage(name: ConformanceImageName, sources: ConformanceSources): Promise<ImageContent> {
  const key = name === 'agnhost' || name === 'agnhost-prev' ? `agnhost-registry-${fileKey(sources.agnhost)}` : name;
  return loadOrBuild(`conformance-image-${key}`, definition(name, sources));
}

export async function pushConformanceImages(registry: { url: string }, sources: ConformanceSources): Promise<void> {
  const client = new RegistryClient(registry.url);
  for (const spec of CONFORMANCE_IMAGES) {
    await pushImage(registry, spec.repository, spec.tag, await getConformanceImage(spec.name, sources), { client });
  }
}

export function conformanceRegistriesConf(mirrorHost: string): string {
  return mirrorRegistriesConf(CONFORMANCE_IMAGES.map((spec) => spec.registry), mirrorHost);
}

/** registries.conf with `mirrorHost` (plain HTTP) as the mirror of each of `registries`. */
export function mirrorRegistriesConf(registries: readonly string[], mirrorHost: string): string {
  return [...new Set(registries)]
    .flatMap((registry) => [
      '[[registry]]',
      `prefix = "${registry}"`,
      `location = "${registry}"`,
      '[[registry.mirror]]',
      `location = "${mirrorHost}"`,
      'insecure = true',
      '',
    ])
    .join('\n');
}
