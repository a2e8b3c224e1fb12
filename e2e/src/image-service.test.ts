import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, lstatSync, readFileSync, readdirSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { status } from '@grpc/grpc-js';
import { callUnary, type ImageServiceClient } from '@skiff/proto';
import { startRegistry, type Registry } from './lib/registry.js';
import { startTokenServer, type TokenServer } from './lib/token-server.js';
import {
  BIG_FILE,
  MULTILAYER,
  TEST_USER,
  getTestImage,
  pushSchema1Image,
  pushTestImage,
  type PushedImage,
} from './lib/image-catalogue.js';
import { startSkiff, SKIFF_ENTRY, type SkiffInstance } from './lib/skiff-instance.js';
import { rejectsWithCode } from './lib/grpc-assert.js';
import { getFreePort } from './lib/free-port.js';
import { buildLayer } from './lib/layer-builder.js';
import { buildImage, type Image } from './lib/oci-image.js';
import { pushImage } from './lib/push.js';
import { makeTempDir, removeDir } from './lib/tmp.js';

const run = promisify(execFile);
const BASIC_USER = { username: 'alice', password: 'wonderland' };
const TOKEN_USER = { username: 'bob', password: 'builder' };

let registry: Registry;
let corruptRegistry: Registry;
let basicRegistry: Registry;
let tokenRegistry: Registry;
let tokenServer: TokenServer;
let skiff: SkiffInstance;
let images: ImageServiceClient;
const pushed: Record<string, PushedImage> = {};

function storeDir(...parts: string[]): string {
  return join(skiff.root, 'images', ...parts);
}

/** Everything an interrupted or failed pull could leave behind. */
function debris(): string[] {
  const left: string[] = [];
  const ingest = storeDir('ingest');
  if (existsSync(ingest)) left.push(...readdirSync(ingest).map((f) => `ingest/${f}`));
  left.push(...readdirSync(storeDir('snapshots')).filter((f) => f.startsWith('.tmp')).map((f) => `snapshots/${f}`));
  return left;
}

function blobCount(): number {
  const dir = storeDir('blobs', 'sha256');
  return existsSync(dir) ? readdirSync(dir).length : 0;
}

function snapshotCount(): number {
  return readdirSync(storeDir('snapshots')).filter((f) => !f.startsWith('.')).length;
}

async function pull(image: string, auth?: Record<string, string>): Promise<string> {
  const response = await callUnary(images, 'PullImage', { image: { image }, ...(auth ? { auth } : {}) }, { timeoutMs: 120_000 });
  return response.image_ref;
}

async function statusOf(image: string, verbose = false) {
  return callUnary(images, 'ImageStatus', { image: { image }, verbose }, { timeoutMs: 10_000 });
}

async function remove(image: string): Promise<void> {
  await callUnary(images, 'RemoveImage', { image: { image } }, { timeoutMs: 30_000 });
}

/** An image whose only layer no other test image has, so its blob can be corrupted alone. */
async function imageWithUniqueLayer(blobDir: string): Promise<Image> {
  const layer = await buildLayer([{ type: 'file', name: 'unique.txt', content: `unique ${Date.now()} ${Math.random()}\n`, mode: 0o644 }], { blobDir });
  return buildImage({ blobDir, layers: [layer] });
}

let skiffTmp: string;

before(async () => {
  skiffTmp = await makeTempDir('skiff-e2e-unique');
  registry = await startRegistry({ schema1: true });
  corruptRegistry = await startRegistry();
  basicRegistry = await startRegistry({ htpasswd: BASIC_USER });
  tokenServer = await startTokenServer({ ...TOKEN_USER });
  tokenRegistry = await startRegistry({ token: tokenServer.registryAuth() });

  for (const name of ['busybox', 'busybox-zstd', 'busybox-uncompressed', 'multilayer', 'multiarch', 'withuser', 'withusername', 'big', 'docker-schema2', 'traversal-dotdot', 'traversal-abs', 'traversal-symlink'] as const) {
    pushed[name] = await pushTestImage(registry, name);
  }
  pushed['busybox-second-tag'] = await pushTestImage(registry, 'busybox', { tag: 'second' });
  pushed['schema1'] = await pushSchema1Image(registry);
  const unique = await imageWithUniqueLayer(skiffTmp);
  pushed['corrupt'] = { ...(await pushImage(corruptRegistry, 'skiff/corrupt', 'latest', unique).then((digest) => ({ repo: 'skiff/corrupt', tag: 'latest', digest, reference: `${corruptRegistry.host}/skiff/corrupt:latest`, digestReference: `${corruptRegistry.host}/skiff/corrupt@${digest}` }))) };
  pushed['corrupt-layer-digest'] = { ...pushed['corrupt'], digest: unique.layers[0]!.digest };
  pushed['basic'] = await pushTestImage(basicRegistry, 'busybox', { credentials: BASIC_USER });
  pushed['token'] = await pushTestImage(tokenRegistry, 'busybox', { credentials: TOKEN_USER });

  skiff = await startSkiff({
    registriesConf: [
      '[[registry]]',
      'prefix = "registry.k8s.io"',
      'location = "registry.k8s.io"',
      '[[registry.mirror]]',
      `location = "${registry.host}"`,
    ].join('\n'),
    imageConfig: `pinned_images = ["${pushed['withuser']!.reference}"]`,
  });
  images = skiff.imageClient();
});

after(async () => {
  await skiff?.stop();
  for (const r of [registry, corruptRegistry, basicRegistry, tokenRegistry]) await r?.stop();
  await tokenServer?.stop();
  await removeDir(skiffTmp);
});

describe('pulling', () => {
  test('by tag: status, list and verbose info describe the image', async () => {
    const ref = await pull(pushed['busybox']!.reference);
    const image = await getTestImage('busybox');
    assert.equal(image.kind, 'image');
    if (image.kind !== 'image') return;
    assert.equal(ref, image.config.digest);

    const { image: status1, info } = await statusOf(pushed['busybox']!.reference, true);
    assert.ok(status1);
    assert.equal(status1.id, ref);
    assert.deepEqual(status1.repo_tags, [`${registry.host}/skiff/busybox:latest`]);
    assert.deepEqual(status1.repo_digests, [`${registry.host}/skiff/busybox@${pushed['busybox']!.digest}`]);
    const layerBytes = image.layers.reduce((sum, l) => sum + l.size, 0);
    assert.equal(Number(status1.size), layerBytes + image.config.size);
    assert.equal(status1.uid, null);
    assert.equal(status1.username, '');
    const verbose = JSON.parse(info['info'] ?? '{}') as { imageSpec: { config: { Cmd: string[] } }; snapshots: string[] };
    assert.deepEqual(verbose.imageSpec.config.Cmd, ['sh']);
    assert.equal(verbose.snapshots.length, 1);
    assert.ok(statSync(join(verbose.snapshots[0]!, 'bin/busybox')).isFile());
    // applets are hard links to busybox inside the snapshot
    assert.equal(statSync(join(verbose.snapshots[0]!, 'bin/sh')).ino, statSync(join(verbose.snapshots[0]!, 'bin/busybox')).ino);
    // The layer's compressed blob was verified as it unpacked and is not kept; its snapshot names it.
    const layerDigest = image.layers[0]!.digest;
    assert.ok(existsSync(storeDir('blobs', 'sha256', ref.slice('sha256:'.length))), 'the config is kept');
    assert.ok(!existsSync(storeDir('blobs', 'sha256', layerDigest.slice('sha256:'.length))), 'the layer blob is not');
    const meta = JSON.parse(readFileSync(join(verbose.snapshots[0]!, '..', 'meta.json'), 'utf8')) as { blobDigests: string[] };
    assert.ok(meta.blobDigests.includes(layerDigest), `meta.json names ${layerDigest}: ${JSON.stringify(meta)}`);

    const listed = await callUnary(images, 'ListImages', {}, { timeoutMs: 5000 });
    assert.ok(listed.images.some((i) => i.id === ref));
    const filtered = await callUnary(images, 'ListImages', { filter: { image: { image: pushed['busybox']!.reference } } });
    assert.deepEqual(filtered.images.map((i) => i.id), [ref]);
    const none = await callUnary(images, 'ListImages', { filter: { image: { image: `${registry.host}/skiff/absent:1` } } });
    assert.deepEqual(none.images, []);
  });

  test('by digest, by id and zstd / uncompressed layers share one snapshot', async () => {
    const byTag = await pull(pushed['busybox']!.reference);
    const snapshotsBefore = snapshotCount();
    assert.equal(await pull(pushed['busybox']!.digestReference), byTag);
    assert.equal((await statusOf(byTag))!.image!.id, byTag);
    assert.equal((await statusOf(byTag.slice('sha256:'.length)))!.image!.id, byTag);
    await pull(pushed['busybox-zstd']!.reference);
    await pull(pushed['busybox-uncompressed']!.reference);
    assert.equal(snapshotCount(), snapshotsBefore, 'the same diff unpacks once, whatever its compression');
    const configs = new Set((await callUnary(images, 'ListImages', {})).images.map((i) => i.id.slice('sha256:'.length)));
    const blobs = readdirSync(storeDir('blobs', 'sha256'));
    assert.deepEqual(blobs.filter((name) => !configs.has(name)), [], 'the store keeps configs only, no layer blob');
  });

  test('multi-layer image: whiteouts, opaque dirs and file metadata through a real overlay mount', async () => {
    await pull(pushed['multilayer']!.reference);
    const { info } = await statusOf(pushed['multilayer']!.reference, true);
    const { snapshots } = JSON.parse(info['info']!) as { snapshots: string[] };
    assert.equal(snapshots.length, 3);
    const mnt = join(skiff.dir, 'mnt-multilayer');
    await mkdir(mnt, { recursive: true });
    await run('mount', ['-t', 'overlay', 'overlay', '-o', `ro,lowerdir=${snapshots.join(':')}`, mnt]);
    try {
      for (const [path, content] of Object.entries(MULTILAYER.files)) assert.equal(readFileSync(join(mnt, path), 'utf8'), content, path);
      for (const path of MULTILAYER.absent) assert.ok(!existsSync(join(mnt, path)), `${path} should be gone`);
      assert.equal(readlinkSync(join(mnt, MULTILAYER.symlink.path)), MULTILAYER.symlink.target);
      assert.equal(lstatSync(join(mnt, MULTILAYER.hardlink.path)).ino, lstatSync(join(mnt, MULTILAYER.hardlink.target)).ino);
      const { stdout } = await run('getfattr', ['--only-values', '-n', MULTILAYER.xattr.name, join(mnt, MULTILAYER.xattr.path)]);
      assert.equal(stdout, MULTILAYER.xattr.value);
      const st = statSync(join(mnt, MULTILAYER.setuid.path));
      assert.equal(st.mode & 0o7777, MULTILAYER.setuid.mode);
      assert.equal(st.uid, MULTILAYER.setuid.uid);
      assert.equal(st.gid, MULTILAYER.setuid.gid);
    } finally {
      await run('umount', [mnt]);
    }
  });

  test('a multi-arch index resolves to linux/amd64 and keeps the index digest', async () => {
    const ref = await pull(pushed['multiarch']!.reference);
    const index = await getTestImage('multiarch');
    assert.equal(index.kind, 'index');
    if (index.kind !== 'index') return;
    const amd64 = index.images.find((i) => i.platform.architecture === 'amd64')!;
    assert.equal(ref, amd64.config.digest);
    const { image, info } = await statusOf(pushed['multiarch']!.reference, true);
    assert.deepEqual(image!.repo_digests, [`${registry.host}/skiff/multiarch@${pushed['multiarch']!.digest}`]);
    assert.equal((JSON.parse(info['info']!) as { platform: { architecture: string } }).platform.architecture, 'amd64');
  });

  test('the config User gives uid or username', async () => {
    await pull(pushed['withuser']!.reference);
    await pull(pushed['withusername']!.reference);
    assert.deepEqual((await statusOf(pushed['withuser']!.reference)).image!.uid, { value: String(TEST_USER.uid) });
    const named = (await statusOf(pushed['withusername']!.reference)).image!;
    assert.equal(named.uid, null);
    assert.equal(named.username, TEST_USER.name);
  });

  test('image.pinned_images: the configured image is reported pinned by ImageStatus and ListImages, others not', async () => {
    const pinnedId = await pull(pushed['withuser']!.reference);
    const otherId = await pull(pushed['withusername']!.reference);
    assert.equal((await statusOf(pushed['withuser']!.reference)).image?.pinned, true);
    assert.equal((await statusOf(pushed['withusername']!.reference)).image?.pinned, false);
    const listed = (await callUnary(images, 'ListImages', {}, { timeoutMs: 10_000 })).images;
    assert.equal(listed.find((i) => i.id === pinnedId)?.pinned, true);
    assert.equal(listed.find((i) => i.id === otherId)?.pinned, false);
  });

  test('Docker schema2 images pull', async () => {
    await pull(pushed['docker-schema2']!.reference);
    assert.ok((await statusOf(pushed['docker-schema2']!.reference)).image);
  });

  test('registry.k8s.io images come from the configured mirror', async () => {
    const ref = await pull('registry.k8s.io/skiff/busybox:latest');
    const { image } = await statusOf('registry.k8s.io/skiff/busybox:latest');
    assert.equal(image!.id, ref);
    assert.ok(image!.repo_tags.includes('registry.k8s.io/skiff/busybox:latest'));
  });

  test('concurrent pulls of one image share a single pull', async () => {
    await remove(pushed['withusername']!.reference);
    const before = skiff.output().split('\n').filter((l) => l.includes('"image pulled"') && l.includes('skiff/withusername')).length;
    const refs = await Promise.all(Array.from({ length: 5 }, () => pull(pushed['withusername']!.reference)));
    assert.equal(new Set(refs).size, 1);
    await new Promise((r) => setTimeout(r, 200));
    const afterCount = skiff.output().split('\n').filter((l) => l.includes('"image pulled"') && l.includes('skiff/withusername')).length;
    assert.equal(afterCount - before, 1);
  });

  test('a 100 MB layer streams through: image-svc\'s memory grows by less than the layer while it does (it never holds the layer whole)', async (t) => {
    const pid = await skiff.servicePid('image-svc');
    assert.ok(pid, 'image-svc runs');
    await remove(pushed['big']!.reference);
    const memoryKiB = (field: 'VmRSS' | 'VmHWM'): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
    // Writing 5 to clear_refs sets the peak (VmHWM) back to the present RSS: what is read after the
    // pull is the most image-svc held at any moment during it, however short.
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    const before = memoryKiB('VmRSS');
    await pull(pushed['big']!.reference);
    const growthKiB = memoryKiB('VmHWM') - before;
    t.diagnostic(`image-svc's RSS: ${before} KiB before the pull, ${growthKiB} KiB more at its peak`);
    assert.ok(growthKiB < BIG_FILE.size / 1024, `image-svc's peak RSS grew by ${growthKiB} KiB while it pulled a ${BIG_FILE.size / 1024} KiB layer`);
    const { info } = await statusOf(pushed['big']!.reference, true);
    const { snapshots } = JSON.parse(info['info']!) as { snapshots: string[] };
    assert.equal(statSync(join(snapshots[0]!, BIG_FILE.path)).size, BIG_FILE.size);
  });
});

describe('authentication', () => {
  test('basic auth: right credentials pull, wrong or none are refused', async () => {
    const ref = pushed['basic']!.reference;
    await rejectsWithCode(pull(ref), status.UNAUTHENTICATED, new RegExp(basicRegistry.host.replace('.', '\\.')));
    await rejectsWithCode(pull(ref, { username: BASIC_USER.username, password: 'wrong' }), status.UNAUTHENTICATED, /authentication failed/);
    assert.match(await pull(ref, { username: BASIC_USER.username, password: BASIC_USER.password }), /^sha256:/);
    const auth = Buffer.from(`${BASIC_USER.username}:${BASIC_USER.password}`).toString('base64');
    await remove(ref);
    assert.match(await pull(ref, { auth }), /^sha256:/);
  });

  test('bearer tokens: fetched once per pull and cached, wrong credentials refused', async () => {
    const ref = pushed['token']!.reference;
    await rejectsWithCode(pull(ref, { username: TOKEN_USER.username, password: 'wrong' }), status.UNAUTHENTICATED);
    tokenServer.resetCounters();
    assert.match(await pull(ref, { username: TOKEN_USER.username, password: TOKEN_USER.password }), /^sha256:/);
    assert.equal(tokenServer.issued, 1, 'one token serves the manifest, config and layer requests');
    await remove(ref);
    assert.match(await pull(ref, { username: TOKEN_USER.username, password: TOKEN_USER.password }), /^sha256:/);
    assert.equal(tokenServer.issued, 1, 'a second pull reuses the cached token');
  });

  test('an identity token is exchanged through the OAuth2 refresh flow', async () => {
    const form = new URLSearchParams({
      grant_type: 'password',
      username: TOKEN_USER.username,
      password: TOKEN_USER.password,
      service: tokenServer.service,
      client_id: 'skiff-e2e',
      scope: 'repository:skiff/busybox:pull',
    });
    const res = await fetch(tokenServer.realm, { method: 'POST', body: form });
    const { refresh_token } = (await res.json()) as { refresh_token: string };
    await remove(pushed['token']!.reference);
    assert.match(await pull(pushed['token']!.reference, { identity_token: refresh_token }), /^sha256:/);
    assert.ok(tokenServer.requests.some((r) => r.grantType === 'refresh_token' && r.status === 200));
  });
});

describe('bad pulls fail cleanly', () => {
  test('malformed reference → InvalidArgument', async () => {
    await rejectsWithCode(pull('UPPER CASE:tag'), status.INVALID_ARGUMENT, /invalid image reference/);
    await rejectsWithCode(pull(''), status.INVALID_ARGUMENT, /required/);
    await rejectsWithCode(statusOf('bad@sha256:123'), status.INVALID_ARGUMENT);
  });

  test('missing image → NotFound naming it', async () => {
    await rejectsWithCode(pull(`${registry.host}/skiff/absent:1`), status.NOT_FOUND, /skiff\/absent/);
  });

  test('nothing listening → Unavailable naming the host', async () => {
    const port = await getFreePort();
    await rejectsWithCode(pull(`127.0.0.1:${port}/skiff/busybox:latest`), status.UNAVAILABLE, new RegExp(`127\\.0\\.0\\.1:${port}`));
  });

  test('schema 1 → FailedPrecondition naming the media type', async () => {
    await rejectsWithCode(pull(pushed['schema1']!.reference), status.FAILED_PRECONDITION, /schema ?1|v1\+prettyjws/i);
  });

  test('a blob that does not match its digest fails and leaves nothing behind', async () => {
    const layer = pushed['corrupt-layer-digest']!.digest;
    await corruptRegistry.corruptBlob(layer);
    const blobsBefore = blobCount();
    const snapshotsBefore = snapshotCount();
    await rejectsWithCode(pull(pushed['corrupt']!.reference), status.FAILED_PRECONDITION, new RegExp(layer));
    assert.deepEqual(debris(), []);
    assert.ok(!existsSync(storeDir('blobs', 'sha256', layer.slice('sha256:'.length))));
    assert.ok(blobCount() <= blobsBefore + 1, 'only the verified config may have been kept');
    assert.equal(snapshotCount(), snapshotsBefore);
    assert.equal((await statusOf(pushed['corrupt']!.reference)).image, null);
  });

  for (const name of ['traversal-dotdot', 'traversal-abs', 'traversal-symlink'] as const) {
    test(`${name}: a layer entry escaping the snapshot fails the pull and leaves nothing`, async () => {
      const snapshotsBefore = snapshotCount();
      await rejectsWithCode(pull(pushed[name]!.reference), status.FAILED_PRECONDITION, /unsafe|outside|escape|symlink|absolute|\.\./i);
      assert.deepEqual(debris(), []);
      assert.equal(snapshotCount(), snapshotsBefore);
      assert.equal((await statusOf(pushed[name]!.reference)).image, null);
      assert.ok(!existsSync('/tmp/skiff-escape'));
      assert.ok(!existsSync('/abs-escape'));
      assert.ok(!existsSync(storeDir('snapshots', 'escape')));
    });
  }
});

describe('removing', () => {
  test('one tag of a multi-tag image untags it; the id removes it; absent succeeds', async () => {
    const id = await pull(pushed['busybox']!.reference);
    assert.equal(await pull(pushed['busybox-second-tag']!.reference), id);
    const tags = (await statusOf(id)).image!.repo_tags;
    assert.ok(tags.includes(pushed['busybox']!.reference) && tags.includes(pushed['busybox-second-tag']!.reference), tags.join(' '));
    await remove(pushed['busybox-second-tag']!.reference);
    assert.deepEqual((await statusOf(id)).image!.repo_tags, tags.filter((t) => t !== pushed['busybox-second-tag']!.reference));
    assert.equal((await statusOf(pushed['busybox-second-tag']!.reference)).image, null);

    await pull(pushed['withuser']!.reference);
    const sharedSnapshots = snapshotCount();
    await remove(id);
    assert.equal((await statusOf(id)).image, null);
    assert.equal(snapshotCount(), sharedSnapshots, 'the busybox layer stays: withuser still uses it');
    await remove(id);
    await remove(`${registry.host}/skiff/never-pulled:1`);
  });

  test('ImageFsInfo reports the store', async () => {
    const { image_filesystems } = await callUnary(images, 'ImageFsInfo', {});
    assert.equal(image_filesystems.length, 1);
    const fs = image_filesystems[0]!;
    assert.equal(fs.fs_id!.mountpoint, storeDir());
    assert.ok(Number(fs.used_bytes!.value) > 1_000_000);
    assert.ok(Number(fs.inodes_used!.value) > 10);
    assert.ok(BigInt(fs.timestamp) > BigInt(Date.now() - 60_000) * 1_000_000n);
  });
});

describe('the daemon', () => {
  test('its socket is root-only', () => {
    assert.equal(statSync(skiff.imageSocket).mode & 0o777, 0o600);
    assert.equal(statSync(skiff.runDir).mode & 0o777, 0o700);
  });

  test('skiff status shows image-svc answering', async () => {
    const { stdout } = await run(process.execPath, [SKIFF_ENTRY, 'status', '--config', skiff.configPath, '--json']);
    const report = JSON.parse(stdout) as { services: Array<{ name: string; answers: boolean; endpoint: string }> };
    const svc = report.services.find((s) => s.name === 'image-svc')!;
    assert.equal(svc.answers, true);
    assert.equal(svc.endpoint, skiff.imageSocket);
  });

  test('killed with SIGKILL mid-pull: restarted, no debris, and the same pull then succeeds', async () => {
    await remove(pushed['big']!.reference);
    const pid = await skiff.servicePid('image-svc');
    assert.ok(pid);
    const pulling = pull(pushed['big']!.reference).then(
      () => 'finished',
      (err: { code: number }) => err.code,
    );
    await new Promise((r) => setTimeout(r, 400));
    process.kill(pid, 'SIGKILL');
    const outcome = await pulling;
    assert.notEqual(outcome, 'finished', 'the pull should have been interrupted');
    await skiff.waitForNewPid('image-svc', pid);
    await skiff.waitUntilImageServiceAnswers();
    assert.deepEqual(debris(), []);
    assert.equal((await statusOf(pushed['big']!.reference)).image, null);
    await pull(pushed['big']!.reference);
    const { info } = await statusOf(pushed['big']!.reference, true);
    const { snapshots } = JSON.parse(info['info']!) as { snapshots: string[] };
    assert.equal(statSync(join(snapshots[0]!, BIG_FILE.path)).size, BIG_FILE.size);
  });

  test('killed with SIGKILL right after RemoveImage answers: the restarted image-svc deletes the layers', async () => {
    const { info } = await statusOf(pushed['big']!.reference, true);
    const { snapshots, layers } = JSON.parse(info['info']!) as { snapshots: string[]; layers: { digest: string }[] };
    const bigSnapshot = snapshots[0]!; // top layer first
    const bigBlob = storeDir('blobs', 'sha256', layers[layers.length - 1]!.digest.slice('sha256:'.length));
    assert.ok(existsSync(bigSnapshot), 'the layer is unpacked');
    assert.ok(!existsSync(bigBlob), 'its compressed blob was not kept');
    const pid = await skiff.servicePid('image-svc');
    assert.ok(pid);
    await remove(pushed['big']!.reference);
    process.kill(pid, 'SIGKILL');
    await skiff.waitForNewPid('image-svc', pid);
    await skiff.waitUntilImageServiceAnswers();
    assert.equal((await statusOf(pushed['big']!.reference)).image, null);
    assert.ok(!existsSync(bigSnapshot), 'the 100 MiB layer is unpacked no more');
    assert.deepEqual(debris(), []);
  });

  test('an unknown registry host, looked up where no resolver can be reached (a network namespace with only loopback) → Unavailable naming the host', async () => {
    // A second image-svc in a network namespace of its own with only loopback: the name lookup fails
    // at once (no route to any resolver), exactly as on a node whose DNS does not know the host.
    const dir = join(skiff.dir, 'isolated');
    await mkdir(dir, { recursive: true });
    const config = join(dir, 'skiff.toml');
    await import('node:fs/promises').then((fs) =>
      fs.writeFile(config, `root = "${join(dir, 'root')}"\nrun_dir = "${join(dir, 'run')}"\n[image]\nregistries_config = "${join(dir, 'none.conf')}"\n`),
    );
    const entry = createRequire(import.meta.url).resolve('@skiff/image-svc/main');
    const { spawn } = await import('node:child_process');
    const child = spawn('unshare', ['--net', process.execPath, entry, '--config', config], { stdio: 'ignore' });
    try {
      const { createImageClient } = await import('@skiff/proto');
      const client = createImageClient(join(dir, 'run', 'image.sock'));
      const deadline = Date.now() + 15_000;
      for (;;) {
        try {
          await callUnary(client, 'ImageFsInfo', {}, { timeoutMs: 500 });
          break;
        } catch (err) {
          if (Date.now() > deadline) throw err;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      await rejectsWithCode(
        callUnary(client, 'PullImage', { image: { image: 'registry.skiff-unknown-host.invalid/app:1' } }, { timeoutMs: 30_000 }),
        status.UNAVAILABLE,
        /registry\.skiff-unknown-host\.invalid/,
      );
      client.close();
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      await rm(dir, { recursive: true, force: true });
    }
  });
});
