import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadRegistriesConfig, parseRegistriesConfig, RegistriesConfigError } from './registries-config.js';

test('parses the version 2 format with mirrors, defaults and ignored client-side keys', () => {
  const config = parseRegistriesConfig(`
unqualified-search-registries = ["docker.io", "quay.io"]
short-name-mode = "enforcing"
credential-helpers = ["containers-auth.json"]

[aliases]
"pause" = "registry.k8s.io/pause"

[[registry]]
prefix = "example.com/foo"
location = "internal.example.net/bar/"
insecure = true

[[registry.mirror]]
location = "mirror-0.local/mirror-for-foo"

[[registry.mirror]]
location = "mirror-1.local:5000/mirrors/foo"
insecure = true
pull-from-mirror = "tag-only"

[[registry]]
location = "registry.com"
blocked = true

[[registry]]
prefix = "*.corp.example"
`);
  assert.deepEqual(config.unqualifiedSearchRegistries, ['docker.io', 'quay.io']);
  assert.deepEqual(config.registries, [
    {
      prefix: 'example.com/foo',
      location: 'internal.example.net/bar',
      insecure: true,
      blocked: false,
      mirrors: [
        { location: 'mirror-0.local/mirror-for-foo', insecure: false, pullFromMirror: 'all' },
        { location: 'mirror-1.local:5000/mirrors/foo', insecure: true, pullFromMirror: 'tag-only' },
      ],
    },
    { prefix: 'registry.com', location: 'registry.com', insecure: false, blocked: true, mirrors: [] },
    { prefix: '*.corp.example', location: '', insecure: false, blocked: false, mirrors: [] },
  ]);
});

test('mirror-by-digest-only makes every mirror digest-only', () => {
  const config = parseRegistriesConfig(`
[[registry]]
prefix = "docker.io"
mirror-by-digest-only = true
[[registry.mirror]]
location = "m.local"
`);
  assert.equal(config.registries[0]!.mirrors[0]!.pullFromMirror, 'digest-only');
  assert.throws(
    () => parseRegistriesConfig('[[registry]]\nprefix = "docker.io"\nmirror-by-digest-only = true\n[[registry.mirror]]\nlocation = "m.local"\npull-from-mirror = "all"\n'),
    /pull-from-mirror cannot be set when its registry has mirror-by-digest-only/,
  );
});

test('an empty file is an empty configuration', () => {
  assert.deepEqual(parseRegistriesConfig('# nothing here\n'), { registries: [], unqualifiedSearchRegistries: [] });
});

test('the version 1 format is refused with its version 2 equivalent', () => {
  const err = assertConfigError(`
[registries.search]
registries = ['registry1.com', 'registry2.com']
[registries.insecure]
registries = ['registry3.com']
[registries.block]
registries = ['registry.untrusted.com']
`);
  assert.match(err.message, /^my\.conf: uses the deprecated version 1 format/);
  assert.match(err.message, /unqualified-search-registries = \["registry1.com","registry2.com"\]/);
  assert.match(err.message, /location = "registry3.com", insecure = true/);
  assert.match(err.message, /location = "registry.untrusted.com", blocked = true/);
});

test('unknown keys are named, at every level', () => {
  assert.match(assertConfigError('unqualified-search-registry = ["a.io"]').message, /unknown key "unqualified-search-registry" in the top level/);
  assert.match(assertConfigError('[[registry]]\nlocation = "a.io"\ninsecur = true\nmirrors = []').message, /unknown keys "insecur", "mirrors" in registry\[0\]/);
  assert.match(assertConfigError('[[registry]]\nlocation = "a.io"\n[[registry.mirror]]\nlocation = "b.io"\npull-from = "all"').message, /unknown key "pull-from" in registry\[0\]\.mirror\[0\]/);
});

test('invalid values say what is wrong', () => {
  const cases: [string, RegExp][] = [
    ['[[registry]]\ninsecure = true', /registry\[0\] needs a prefix or a location/],
    ['[[registry]]\nlocation = "https://a.io"', /must not have a URL scheme/],
    ['[[registry]]\nlocation = "a.io"\ninsecure = "yes"', /registry\[0\]\.insecure must be true or false, got "yes"/],
    ['[[registry]]\nprefix = "*.a.io/foo"', /a wildcard is only allowed as "\*\.domain"/],
    ['[[registry]]\nprefix = "a.*.io"', /a wildcard is only allowed/],
    ['[[registry]]\nlocation = "a.io/Upper"', /not a valid repository path/],
    ['[[registry]]\nlocation = "a.io"\n[[registry.mirror]]\ninsecure = true', /mirror\[0\] has no location/],
    ['[[registry]]\nlocation = "a.io"\n[[registry.mirror]]\nlocation = "b.io"\npull-from-mirror = "sometimes"', /pull-from-mirror must be "all", "digest-only" or "tag-only"/],
    ['unqualified-search-registries = ["a.io/ns"]', /must be host\[:port\], with no path/],
    ['short-name-mode = "strict"', /short-name-mode must be/],
    ['[[registry]]\nlocation = "a.io"\n[[registry]]\nlocation = "a.io"', /repeats the prefix "a.io"/],
    ['[[registry]]\nprefix = "x.io"\nlocation = "a.io"\n[[registry]]\nprefix = "y.io"\nlocation = "a.io"\ninsecure = true', /conflicting "insecure"/],
    ['[[registry]\nlocation = "a.io"', /invalid TOML at line 1/],
  ];
  for (const [text, pattern] of cases) assert.match(assertConfigError(text).message, pattern, text);
});

test('loading: a missing file is an empty configuration, a present one is parsed and named in errors', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'registries-conf-'));
  try {
    assert.deepEqual(await loadRegistriesConfig(join(dir, 'absent.conf')), { registries: [], unqualifiedSearchRegistries: [] });
    const path = join(dir, 'registries.conf');
    await writeFile(path, 'unqualified-search-registries = ["docker.io"]\n');
    assert.deepEqual((await loadRegistriesConfig(path)).unqualifiedSearchRegistries, ['docker.io']);
    await writeFile(path, 'bogus = 1\n');
    await assert.rejects(loadRegistriesConfig(path), (err: Error) => err instanceof RegistriesConfigError && err.message.startsWith(`${path}: unknown key "bogus"`));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

function assertConfigError(text: string): RegistriesConfigError {
  try {
    parseRegistriesConfig(text, 'my.conf');
  } catch (err) {
    assert.ok(err instanceof RegistriesConfigError, String(err));
    return err;
  }
  assert.fail(`accepted: ${text}`);
}
