import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { installUnitsCommand } from './commands/install-units.js';
import { SERVICES } from './services.js';
import { serviceUnit } from './systemd-units.js';
import { JEMALLOC_PATH } from './malloc-environment.js';

const run = promisify(execFile);

describe('systemd units', () => {
  it('notify readiness, delegate cgroups to runtime-svc, and leave containers running on a restart', () => {
    const unit = serviceUnit(SERVICES.find((s) => s.name === 'runtime-svc')!, { node: '/usr/bin/node', configPath: '/etc/skiff/skiff.toml' });
    for (const line of ['Type=notify', 'Delegate=yes', 'KillMode=process', 'Restart=always', 'StandardOutput=journal', 'WantedBy=skiff.target']) {
      assert.ok(unit.split('\n').includes(line), `${line} in\n${unit}`);
    }
    assert.match(unit, /^ExecStart=\/usr\/bin\/node --max-semi-space-size=2 --expose-gc \S+runtime-svc\S*main\.js --config \/etc\/skiff\/skiff\.toml$/m);
    assert.ok(unit.split('\n').includes(`Environment=LD_PRELOAD=${JEMALLOC_PATH}`), unit);
    const image = serviceUnit(SERVICES.find((s) => s.name === 'image-svc')!, { node: '/usr/bin/node', configPath: '/etc/skiff/skiff.toml' });
    assert.equal(image.includes('Delegate=yes'), false);
    assert.ok(image.split('\n').includes('Environment=MALLOC_MMAP_THRESHOLD_=65536'), image);
  });

  it('install-units writes units that systemd-analyze verify finds clean', async () => {
    const dir = await fs.mkdtemp(join(tmpdir(), 'skiff-units-'));
    try {
      const config = join(dir, 'skiff.toml');
      await fs.writeFile(config, '');
      assert.equal(await installUnitsCommand(config, dir), 0);
      const names = (await fs.readdir(dir)).filter((n) => n.endsWith('.service') || n.endsWith('.target')).sort();
      assert.deepEqual(names, ['skiff-image-svc.service', 'skiff-logs-svc.service', 'skiff-runtime-svc.service', 'skiff-stream-svc.service', 'skiff.target']);
      const { stdout, stderr } = await run('systemd-analyze', ['verify', '--man=no', ...names.map((n) => join(dir, n))], { env: { ...process.env, SYSTEMD_LOG_LEVEL: 'warning' } });
      assert.equal(`${stdout}${stderr}`.trim(), '');
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
