import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { SUPERVISOR_NODE_OPTIONS } from './node-options.js';

const SETUP_SCRIPT = fileURLToPath(new URL('../../../scripts/setup.sh', import.meta.url));

describe('supervisor node options', () => {
  it('are the ones the installed skiff wrapper runs main.js with', async () => {
    const script = await readFile(SETUP_SCRIPT, 'utf8');
    const exec = script.split('\n').find((line) => line.startsWith('exec ') && line.includes('packages/skiff/dist/main.js'));
    assert.ok(exec, 'the wrapper exec line in scripts/setup.sh');
    const options = exec.slice(exec.indexOf(')"') + 2, exec.indexOf('"$REPO')).trim();
    assert.equal(options, SUPERVISOR_NODE_OPTIONS.join(' '));
  });
});
