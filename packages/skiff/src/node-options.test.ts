import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { CLI_NODE_OPTIONS } from './node-options.js';
import { SKIFF_COMMAND, SUPERVISOR_SCRIPT } from './paths.js';

const SETUP_SCRIPT = fileURLToPath(new URL('../../../scripts/setup.sh', import.meta.url));

describe('the CLI node options', () => {
  it('are the ones bin/skiff runs dist/main.js with', async () => {
    const script = await readFile(SKIFF_COMMAND, 'utf8');
    const exec = script.split('\n').find((line) => line.startsWith('exec "$node"') && line.includes('dist/main.js'));
    assert.ok(exec, 'the exec line of bin/skiff');
    assert.equal(exec.slice('exec "$node"'.length, exec.indexOf('"$here')).trim(), CLI_NODE_OPTIONS.join(' '));
  });

  it('are the ones bin/skiff-supervisor asks for its plan with', async () => {
    const script = await readFile(SUPERVISOR_SCRIPT, 'utf8');
    const line = script.split('\n').find((l) => l.startsWith('cli_node_options=('));
    assert.ok(line, 'cli_node_options in bin/skiff-supervisor');
    assert.equal(line.slice('cli_node_options=('.length, line.lastIndexOf(')')), CLI_NODE_OPTIONS.join(' '));
  });

  it('reach the installed skiff command: the wrapper scripts/setup.sh writes runs bin/skiff', async () => {
    const script = await readFile(SETUP_SCRIPT, 'utf8');
    assert.ok(script.split('\n').some((line) => line.includes('exec "$REPO/packages/skiff/bin/skiff" "\\$@"')));
  });
});
