import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkReadmeTree } from './readme-tree.js';
import { workspacePath } from './workspace.js';

function fakePackage(readme: string, files: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'readme-tree-'));
  writeFileSync(join(dir, 'README.md'), readme);
  for (const file of files) {
    mkdirSync(join(dir, file, '..'), { recursive: true });
    writeFileSync(join(dir, file), '');
  }
  return dir;
}

describe('checkReadmeTree', () => {
  const table = (rows: string[]): string => ['# pkg', '', '## Where things are', '', '| file | job |', '|---|---|', ...rows, '', '## Next', '', '| `src/elsewhere.ts` | not in the section |', ''].join('\n');

  it('finds a named path that does not exist, and a source file nothing names', () => {
    const dir = fakePackage(table(['| `src/main.ts`, `gone.ts` | start-up |', '| `cni/` | networks |']), ['src/main.ts', 'src/cni/cni.ts', 'src/extra.ts', 'src/extra.test.ts', 'src/index.ts']);
    try {
      assert.deepEqual(checkReadmeTree(dir, dir), { missing: ['gone.ts'], unnamed: ['src/extra.ts'] });
    } finally {
      rmSync(dir, { recursive: true });
    }
  });

  it('takes bare names beside the cell\'s previous path, in the header\'s directory, in src/ and in the package', () => {
    const dir = fakePackage(
      [
        '## Where things are',
        '',
        '| `calls/` file | call |',
        '| --- | --- |',
        '| `version.ts`, `status.ts` | Version, Status |',
        '',
        '| file | job |',
        '|---|---|',
        '| `src/commands/up.ts`, `down.ts` | commands |',
        '| `bin/tool` | the command |',
        '| `main.ts` | start-up |',
      ].join('\n'),
      ['src/calls/version.ts', 'src/calls/status.ts', 'src/commands/up.ts', 'src/commands/down.ts', 'bin/tool', 'src/main.ts'],
    );
    try {
      assert.deepEqual(checkReadmeTree(dir, dir), { missing: [], unnamed: [] });
    } finally {
      rmSync(dir, { recursive: true });
    }
  });

  it('checks a table of modules outside the section too, but asks that files be named only where the section is', () => {
    const dir = fakePackage(['# pkg', '', '## Design', '', '| module | job |', '| --- | --- |', '| `cni/default-network.ts` | gone |', '| `cni/cni.ts` | there |', ''].join('\n'), ['src/cni/cni.ts', 'src/other.ts']);
    try {
      assert.deepEqual(checkReadmeTree(dir, dir), { missing: ['cni/default-network.ts'], unnamed: [] });
    } finally {
      rmSync(dir, { recursive: true });
    }
  });

  it('has nothing to say of a README without the section or a table of paths', () => {
    const dir = fakePackage('# pkg\n\nNo table.\n', ['src/main.ts']);
    try {
      assert.equal(checkReadmeTree(dir, dir), undefined);
    } finally {
      rmSync(dir, { recursive: true });
    }
  });
});

describe('every package README\'s "Where things are" and tables of paths', () => {
  const dirs = [...readdirSync(workspacePath('packages')).map((name) => `packages/${name}`), 'e2e', 'bench'];
  const checked = dirs.filter((dir) => checkReadmeTree(workspacePath(dir), workspacePath('')) !== undefined);

  it('is there in the service packages', () => {
    for (const service of ['image-svc', 'runtime-svc', 'stream-svc', 'logs-svc', 'skiff']) {
      assert.ok(readFileSync(workspacePath(`packages/${service}/README.md`), 'utf8').match(/^#+ Where things are$/m), `packages/${service}/README.md has a "Where things are" section`);
    }
  });

  for (const dir of checked) {
    it(`${dir}: names only paths that exist, and every source file`, () => {
      assert.deepEqual(checkReadmeTree(workspacePath(dir), workspacePath('')), { missing: [], unnamed: [] });
    });
  }
});
