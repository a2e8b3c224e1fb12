/**
 * The images the CRI validation suite (critest, sigs.k8s.io/cri-tools v1.37) pulls, built offline
 * under the names and tags its pkg/framework and pkg/validate constants give, on the conformance
 * images' busybox userland and Debian packages (conformance-images.ts), each doing what its specs
 * expect of it (cri-tools' images/ directory describes the originals):
 *
 *   CRITEST_IMAGES: readonly CritestImage[]      { reference, registry, repository, tag, content }
 *   UNRUNNABLE_CRITEST_IMAGES: readonly { reference, reason }[]
 *   getCritestImage(image): Promise<ImageContent>
 *   pushCritestImages(registry): Promise<void>   each into `registry` as <repository>:<tag>
 *   critestRegistriesConf(mirrorHost): string    the mirror of every registry named here
 *
 *   busybox            the busybox userland (busybox built from its upstream source: ipcs, pgrep,
 *                      a shell that runs commands from PATH), CMD sh
 *   nginx              Debian's nginx on port 80 (the web server of the networking specs)
 *   hostnet-nginx      the same on port 12003 (the host-network specs)
 *   httpd              busybox's httpd serving a page on port 80 in the foreground; like Apache's
 *                      image it names itself on stderr as it starts (the log spec looks for "httpd")
 *   user               busybox with USER set (a uid, a name, with a group)
 *   predefined-group   busybox with default-user (1000) in group-defined-in-image (50000), USER 1000
 *   marker             busybox with an empty file /<name>: distinct images per name, the same
 *                      image under each tag that names the same file
 *   nonewprivs         the conformance nonewprivs image (nnp, setuid root, built from the
 *                      Kubernetes module's source)
 *   pause              the conformance pause image (catatonit)
 */
import type { Layer } from './layer-builder.js';
import { BUSYBOX_ACCOUNTS, dir, file, imageOf, mirrorRegistriesConf, nginxImage, nonewprivsImage, pauseImage, userland } from './conformance-images.js';
import { cachedLayer, loadOrBuild } from './image-catalogue.js';
import type { ImageContent } from './oci-image.js';
import { pushImage } from './push.js';
import { RegistryClient } from './registry-client.js';

export type CritestImageContent =
  | { kind: 'busybox' }
  | { kind: 'nginx'; port: number }
  | { kind: 'httpd' }
  | { kind: 'user'; user: string }
  | { kind: 'predefined-group' }
  | { kind: 'marker'; file: string }
  | { kind: 'nonewprivs' }
  | { kind: 'pause' };

export interface CritestImage {
  /** The reference critest pulls, with its tag (":latest" where critest names none). */
  reference: string;
  registry: string;
  /** The repository inside its registry, e.g. k8s-staging-cri-tools/test-image-1. */
  repository: string;
  tag: string;
  content: CritestImageContent;
}

const E2E = 'registry.k8s.io/e2e-test-images';
const CRI_TOOLS = 'gcr.io/k8s-staging-cri-tools';

function image(reference: string, content: CritestImageContent): CritestImage {
  const slash = reference.indexOf('/');
  const colon = reference.lastIndexOf(':');
  return { reference, content, registry: reference.slice(0, slash), repository: reference.slice(slash + 1, colon), tag: reference.slice(colon + 1) };
}

/**
 * As pkg/framework/util.go and pkg/validate's consts.go, consts_linux.go, multi_container_linux.go
 * and security_context_linux.go of cri-tools v1.37.0 name them (amd64).
 */
export const CRITEST_IMAGES: readonly CritestImage[] = [
  image(`${E2E}/busybox:1.29-2`, { kind: 'busybox' }),
  image(`${E2E}/nginx:1.14-2`, { kind: 'nginx', port: 80 }),
  image(`${E2E}/httpd:2.4.39-4`, { kind: 'httpd' }),
  image(`${CRI_TOOLS}/hostnet-nginx-amd64:latest`, { kind: 'nginx', port: 12003 }),
  image(`${CRI_TOOLS}/test-image-user-uid:latest`, { kind: 'user', user: '1002' }),
  image(`${CRI_TOOLS}/test-image-user-username:latest`, { kind: 'user', user: 'www-data' }),
  image(`${CRI_TOOLS}/test-image-user-uid-group:latest`, { kind: 'user', user: '1003:1004' }),
  image(`${CRI_TOOLS}/test-image-user-username-group:latest`, { kind: 'user', user: 'www-data:1004' }),
  image(`${CRI_TOOLS}/test-image-predefined-group:latest`, { kind: 'predefined-group' }),
  image(`${CRI_TOOLS}/test-image-latest:latest`, { kind: 'marker', file: 'test-image-latest' }),
  image(`${CRI_TOOLS}/test-image-1:latest`, { kind: 'marker', file: 'test-image-1' }),
  image(`${CRI_TOOLS}/test-image-2:latest`, { kind: 'marker', file: 'test-image-2' }),
  image(`${CRI_TOOLS}/test-image-3:latest`, { kind: 'marker', file: 'test-image-3' }),
  image(`${CRI_TOOLS}/test-image-tags:1`, { kind: 'marker', file: 'same-image' }),
  image(`${CRI_TOOLS}/test-image-tags:2`, { kind: 'marker', file: 'same-image' }),
  image(`${CRI_TOOLS}/test-image-tags:3`, { kind: 'marker', file: 'same-image' }),
  image(`${CRI_TOOLS}/test-image-tag:test`, { kind: 'marker', file: 'test' }),
  image(`${CRI_TOOLS}/test-image-tag:all`, { kind: 'marker', file: 'all' }),
  image(`${E2E}/nonewprivs:1.3`, { kind: 'nonewprivs' }),
  image('registry.k8s.io/pause:3.9', { kind: 'pause' }),
  image('k8s.gcr.io/pause:3.9', { kind: 'pause' }),
];

export const UNRUNNABLE_CRITEST_IMAGES: readonly { reference: string; reason: string }[] = [
  {
    reference: `${CRI_TOOLS}/test-image-digest@sha256:9700f9a2f5bf2c45f2f605a0bd3bce7cf37420ec9d3ed50ac2758413308766bf`,
    reason: 'pinned by the digest of the upstream manifest, which an image built here cannot have (the machine cannot reach gcr.io)',
  },
];

const PREDEFINED_GROUP_ACCOUNTS = {
  passwd: `${BUSYBOX_ACCOUNTS.passwd}default-user:x:1000:1000::/home/default-user:/bin/sh\n`,
  group: `${BUSYBOX_ACCOUNTS.group}default-user:x:1000:\ngroup-defined-in-image:x:50000:default-user\n`,
};

const HTTPD_ROOT = 'usr/local/apache2/htdocs';

function httpdLayer(): Promise<Layer> {
  return cachedLayer('critest-httpd', () => [
    dir('usr'),
    dir('usr/local'),
    dir('usr/local/apache2'),
    dir(HTTPD_ROOT),
    file(`${HTTPD_ROOT}/index.html`, '<html><body><h1>It works!</h1></body></html>\n'),
  ]);
}

function definition(content: CritestImageContent): () => Promise<ImageContent> {
  switch (content.kind) {
    case 'busybox':
      return () => imageOf([userland()], { Cmd: ['sh'] });
    case 'nginx':
      return () => nginxImage(content.port);
    case 'httpd':
      return () =>
        imageOf([userland(), httpdLayer()], {
          Cmd: ['sh', '-c', `echo "httpd: serving /${HTTPD_ROOT} on port 80" >&2; exec httpd -f -vv -p 80 -h /${HTTPD_ROOT}`],
          ExposedPorts: { '80/tcp': {} },
        });
    case 'user':
      return () => imageOf([userland()], { Cmd: ['sh'], User: content.user });
    case 'predefined-group':
      return () =>
        imageOf(
          [
            userland(),
            cachedLayer('critest-predefined-group', () => [
              dir('etc'),
              file('etc/passwd', PREDEFINED_GROUP_ACCOUNTS.passwd),
              file('etc/group', PREDEFINED_GROUP_ACCOUNTS.group),
              dir('home'),
              { type: 'dir', name: 'home/default-user', mode: 0o755, uid: 1000, gid: 1000 },
            ]),
          ],
          { Cmd: ['sh'], User: '1000' },
        );
    case 'marker':
      return () => imageOf([userland(), cachedLayer(`critest-marker-${content.file}`, () => [file(content.file, '')])], { Cmd: ['sh'] });
    case 'nonewprivs':
      return () => nonewprivsImage();
    case 'pause':
      return pauseImage;
  }
}

/** One image per distinct content: the tags of test-image-tags share one, the pause images too. */
export function getCritestImage(spec: CritestImage): Promise<ImageContent> {
  const { kind, ...rest } = spec.content;
  const key = [kind, ...Object.values(rest).map(String)].join('-');
  return loadOrBuild(`critest-image-${key}`, definition(spec.content));
}

export async function pushCritestImages(registry: { url: string }): Promise<void> {
  const client = new RegistryClient(registry.url);
  for (const spec of CRITEST_IMAGES) await pushImage(registry, spec.repository, spec.tag, await getCritestImage(spec), { client });
}

export function critestRegistriesConf(mirrorHost: string): string {
  return mirrorRegistriesConf(CRITEST_IMAGES.map((spec) => spec.registry), mirrorHost);
}
