import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseOciProcess, type OciProcess } from './oci-process.js';

const FULL: OciProcess = {
  terminal: false,
  consoleSize: { height: 24, width: 80 },
  user: { uid: 1000, gid: 2000, umask: 0o022, additionalGids: [10, 20] },
  args: ['/app', '--flag'],
  env: ['PATH=/bin', 'A=1'],
  cwd: '/work',
  capabilities: { bounding: ['CAP_CHOWN'], effective: ['CAP_CHOWN'], permitted: ['CAP_CHOWN'], inheritable: [], ambient: [] },
  rlimits: [{ type: 'RLIMIT_NOFILE', hard: 4096, soft: 1024 }, { type: 'RLIMIT_CORE', hard: 2 ** 64, soft: 2 ** 64 }],
  noNewPrivileges: true,
  apparmorProfile: 'skiff-default',
  oomScoreAdj: -998,
  selinuxLabel: 'system_u:system_r:container_t:s0',
};

const MINIMAL: OciProcess = { user: { uid: 0, gid: 0 }, args: [], env: [], cwd: '/' };

describe('parseOciProcess', () => {
  it('takes every field runtime-svc writes, as it is, and a process with only the required ones', () => {
    assert.deepEqual(parseOciProcess(JSON.parse(JSON.stringify(FULL)), 'process'), FULL);
    assert.deepEqual(parseOciProcess({ ...MINIMAL }, 'process'), MINIMAL);
  });

  it('refuses what is no OCI process, naming the field', () => {
    const cases: [unknown, RegExp][] = [
      [[], /Exec: process must be the container's OCI process$/],
      [{ ...MINIMAL, user: undefined }, /Exec: process\.user must be an object with uid and gid/],
      [{ ...MINIMAL, user: { uid: '0', gid: 0 } }, /Exec: process\.user\.uid must be an integer/],
      [{ ...MINIMAL, user: { uid: 0, gid: 0, additionalGids: [1, 1.5] } }, /Exec: process\.user\.additionalGids\[1\] must be an integer/],
      [{ ...MINIMAL, user: { uid: 0, gid: 0, name: 'root' } }, /Exec: process\.user\.name is not part of the request/],
      [{ ...MINIMAL, env: 'A=1' }, /Exec: process\.env must be a list of strings/],
      [{ ...MINIMAL, args: [1] }, /Exec: process\.args must be a list of strings/],
      [{ ...MINIMAL, cwd: 'work' }, /Exec: process\.cwd must be an absolute path/],
      [{ ...MINIMAL, capabilities: { bounding: [] } }, /Exec: process\.capabilities\.effective must be a list of strings/],
      [{ ...MINIMAL, rlimits: [{ type: 'NOFILE', hard: 1, soft: 1 }] }, /Exec: process\.rlimits\[0\]\.type must name an RLIMIT_ resource/],
      [{ ...MINIMAL, rlimits: [{ type: 'RLIMIT_NOFILE', hard: -1, soft: 1 }] }, /Exec: process\.rlimits\[0\]\.hard must be an integer/],
      [{ ...MINIMAL, noNewPrivileges: 'yes' }, /Exec: process\.noNewPrivileges must be a boolean/],
      [{ ...MINIMAL, terminal: 1 }, /Exec: process\.terminal must be a boolean/],
      [{ ...MINIMAL, consoleSize: { height: 1 } }, /Exec: process\.consoleSize\.width must be an integer/],
      [{ ...MINIMAL, oomScoreAdj: 1001 }, /Exec: process\.oomScoreAdj must be an integer from -1000 to 1000/],
      [{ ...MINIMAL, apparmorProfile: 7 }, /Exec: process\.apparmorProfile must be a string/],
      [{ ...MINIMAL, hooks: [] }, /Exec: process\.hooks is not part of the request/],
    ];
    for (const [value, message] of cases) assert.throws(() => parseOciProcess(value, 'Exec: process'), message, JSON.stringify(value));
  });
});
