import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_RUNC_PATH } from './runc.js';
import { parseRuntimeVersion, readRuntimeVersion, runcLacksEscapeFixes } from './runtime-version.js';

describe('OCI runtime versions', () => {
  it("reads the name, version and commit runc, crun and runsc print", () => {
    assert.deepEqual(parseRuntimeVersion('runc version 1.1.5+ds1\ncommit: 1.1.5+ds1-1+deb12u1\nspec: 1.0.2-dev\ngo: go1.19.8\n'), {
      name: 'runc',
      version: '1.1.5+ds1',
      commit: '1.1.5+ds1-1+deb12u1',
    });
    assert.deepEqual(parseRuntimeVersion('crun version 1.8.1\ncommit: f8a096be060b22ccd3d5f3ebe44108517fbf6c30\n'), { name: 'crun', version: '1.8.1', commit: 'f8a096be060b22ccd3d5f3ebe44108517fbf6c30' });
    assert.deepEqual(parseRuntimeVersion('runsc version 0.0~20240729.0\nspec: 1.0.2-dev\n'), { name: 'runsc', version: '0.0~20240729.0' });
    assert.equal(parseRuntimeVersion('Usage: something\n'), undefined);
    assert.equal(parseRuntimeVersion(''), undefined);
  });

  it('takes a runc as lacking the escape fixes below 1.3.6 and 1.4.3, and on lines with no fixed release', () => {
    for (const old of ['1.1.5+ds1', '1.1.15', '1.2.8', '1.3.0', '1.3.5', '1.4.0', '1.4.2', '0.1.1', 'v1.4.2', 'unknown', '']) {
      assert.equal(runcLacksEscapeFixes(old), true, old);
    }
    for (const fixed of ['1.3.6', '1.3.7', '1.4.3', '1.4.10', '1.5.0', '1.6.0-rc.1', '2.0.0', 'v1.4.3']) {
      assert.equal(runcLacksEscapeFixes(fixed), false, fixed);
    }
  });

  it('reads the version of the default runc (scripts/runc.sh installs it), which has the fixes', async () => {
    const read = await readRuntimeVersion(DEFAULT_RUNC_PATH);
    assert.ok(!('error' in read), JSON.stringify(read));
    assert.equal(read.name, 'runc');
    assert.equal(runcLacksEscapeFixes(read.version), false, `${DEFAULT_RUNC_PATH} is runc ${read.version}`);
  });

  it('says why a version cannot be read', async () => {
    const read = await readRuntimeVersion('/bin/false');
    assert.ok('error' in read);
    assert.match(read.error, /\/bin\/false --version answered exit 1/);
    const missing = await readRuntimeVersion('/nonexistent/runc');
    assert.ok('error' in missing);
    assert.match(missing.error, /\/nonexistent\/runc/);
  });
});
