import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { PROTO_PATH } from '@skiff/proto';
import { containerRecordFixture } from '../state/record-fixtures.js';
import { toCriContainerStatus } from './container-view.js';
import { resolveCommand } from './command.js';
import { mergeEnv } from './env.js';
import { resolveLogPath } from './log-path.js';
import { criSignalName, criSignalNumber, parseSignal } from './signals.js';
import { parseGroup, parsePasswd, resolveUser, UserResolutionError } from './user.js';

describe('command and args against the image entrypoint and cmd', () => {
  const image = { entrypoint: ['/entry'], cmd: ['default-arg'] };
  it('uses the image when the config gives nothing', () => {
    assert.deepEqual(resolveCommand(image, [], []), ['/entry', 'default-arg']);
  });
  it('args replace only the image cmd', () => {
    assert.deepEqual(resolveCommand(image, [], ['a', 'b']), ['/entry', 'a', 'b']);
  });
  it('command replaces the entrypoint and drops the image cmd', () => {
    assert.deepEqual(resolveCommand(image, ['/bin/sh'], []), ['/bin/sh']);
    assert.deepEqual(resolveCommand(image, ['/bin/sh'], ['-c', 'x']), ['/bin/sh', '-c', 'x']);
  });
  it('copes with images that lack either', () => {
    assert.deepEqual(resolveCommand({ entrypoint: null, cmd: ['sh'] }, [], []), ['sh']);
    assert.deepEqual(resolveCommand({}, [], ['x']), ['x']);
    assert.deepEqual(resolveCommand({}, [], []), []);
  });
});

describe('environment merge', () => {
  it('puts HOSTNAME first, then image variables, with config values replacing in place', () => {
    const env = mergeEnv('pod-1', ['PATH=/bin', 'A=image', 'EMPTY=', 'broken'], [
      { key: 'A', value: 'config' },
      { key: 'B', value: 'x=y' },
      { key: 'HOSTNAME', value: 'mine' },
    ]);
    assert.deepEqual(env, ['HOSTNAME=mine', 'PATH=/bin', 'A=config', 'EMPTY=', 'B=x=y']);
  });
  it('leaves HOSTNAME out without a hostname', () => {
    assert.deepEqual(mergeEnv('', ['X=1'], []), ['X=1']);
  });
});

describe('log path containment', () => {
  it('joins the relative path to the log directory', () => {
    assert.equal(resolveLogPath('/var/log/pods/ns_p_uid', 'c/0.log'), '/var/log/pods/ns_p_uid/c/0.log');
    assert.equal(resolveLogPath('/var/log/pods/x/', './c/../d.log'), '/var/log/pods/x/d.log');
  });
  it('has no log file without a directory or a path', () => {
    assert.equal(resolveLogPath('', 'c/0.log'), '');
    assert.equal(resolveLogPath('/var/log/pods/x', ''), '');
  });
  it('refuses paths leaving the directory, naming the problem', () => {
    for (const bad of ['../escape.log', 'c/../../escape.log', '.', 'c/..']) {
      assert.throws(() => resolveLogPath('/var/log/pods/x', bad), (e: Error & { code?: number }) => e.code === 3 && /leaves the sandbox's log directory/.test(e.message), bad);
    }
    assert.throws(() => resolveLogPath('relative/dir', 'a.log'), /absolute/);
    assert.throws(() => resolveLogPath('/var/log/pods/x', 'a:b.log'), /':'/);
  });
  it('keeps an absolute-looking log path inside the directory', () => {
    assert.equal(resolveLogPath('/logs', '/etc/passwd'), '/logs/etc/passwd');
  });
});

describe('signals', () => {
  it('parses names, short names, numbers and real-time signals', () => {
    assert.equal(parseSignal('SIGTERM'), 15);
    assert.equal(parseSignal('term'), 15);
    assert.equal(parseSignal('9'), 9);
    assert.equal(parseSignal('SIGQUIT'), 3);
    assert.equal(parseSignal('SIGRTMIN+3'), 37);
    assert.equal(parseSignal('RTMAX-1'), 63);
    assert.equal(parseSignal('SIGPOLL'), 29);
    assert.equal(parseSignal('SIGNOPE'), undefined);
    assert.equal(parseSignal('99'), undefined);
  });
  it('maps the CRI Signal enum', () => {
    assert.equal(criSignalNumber('SIGNAL_RUNTIME_DEFAULT'), undefined);
    assert.equal(criSignalNumber('SIGNAL_SIGUSR1'), 10);
    assert.equal(criSignalNumber('SIGNAL_SIGRTMINPLUS1'), 35);
    assert.equal(criSignalNumber('SIGNAL_SIGRTMAXMINUS2'), 62);
    assert.equal(criSignalNumber('SIGNAL_SIGRTMAX'), 64);
  });
  it('names every signal number as a value of the CRI Signal enum, the usual name of two', () => {
    const proto = readFileSync(PROTO_PATH, 'utf8');
    const values = [...(/enum Signal \{([^}]*)\}/.exec(proto)?.[1] ?? '').matchAll(/(SIGNAL_\w+) = \d+;/g)].map((m) => m[1]!).filter((v) => v !== 'SIGNAL_RUNTIME_DEFAULT');
    assert.equal(values.length, 65);
    const aliases: Record<string, string> = { SIGNAL_SIGIOT: 'SIGNAL_SIGABRT', SIGNAL_SIGCLD: 'SIGNAL_SIGCHLD', SIGNAL_SIGPOLL: 'SIGNAL_SIGIO' };
    for (const value of values) assert.equal(criSignalName(criSignalNumber(value)!), aliases[value] ?? value);
    assert.equal(criSignalName(32), 'SIGNAL_RUNTIME_DEFAULT');
  });
  it("ContainerStatus reports the signal StopContainer will send: the config's, else the image's, else SIGTERM", () => {
    const stopSignalOf = (extra: Parameters<typeof containerRecordFixture>[3]) => toCriContainerStatus(containerRecordFixture('c', 's', 'running', extra)).stop_signal;
    assert.equal(stopSignalOf({ criStopSignal: 'SIGNAL_RUNTIME_DEFAULT', stopSignal: 15 }), 'SIGNAL_SIGTERM');
    assert.equal(stopSignalOf({ criStopSignal: 'SIGNAL_RUNTIME_DEFAULT', stopSignal: 3 }), 'SIGNAL_SIGQUIT');
    assert.equal(stopSignalOf({ criStopSignal: 'SIGNAL_SIGIOT', stopSignal: 6 }), 'SIGNAL_SIGIOT');
  });
});

describe('user resolution from /etc/passwd and /etc/group', () => {
  const passwd = parsePasswd('root:x:0:0:root:/root:/bin/sh\n# comment\nwww:x:33:33::/var/www:/bin/false\nalice:x:1000:1000::/home/alice:/bin/sh\nbad line\n');
  const groups = parseGroup('root:x:0:\nwww:x:33:\nalice:x:1000:\nwheel:x:10:alice,bob\nstaff:x:50: alice \n');
  const base = { imageUser: '', supplementalGroups: [], policy: 'Merge' as const };

  it('parses the files, skipping comments and malformed lines', () => {
    assert.deepEqual(passwd.map((p) => p.name), ['root', 'www', 'alice']);
    assert.deepEqual(groups.find((g) => g.name === 'staff')?.members, ['alice']);
  });
  it('defaults to root', () => {
    assert.deepEqual(resolveUser(base, passwd, groups), { uid: 0, gid: 0, additionalGids: [0] });
  });
  it('resolves image users by name, uid and with a group', () => {
    assert.deepEqual(resolveUser({ ...base, imageUser: 'www' }, passwd, groups), { uid: 33, gid: 33, additionalGids: [33] });
    assert.deepEqual(resolveUser({ ...base, imageUser: '1000' }, passwd, groups), { uid: 1000, gid: 1000, additionalGids: [1000, 10, 50] });
    assert.deepEqual(resolveUser({ ...base, imageUser: 'alice:www' }, passwd, groups).gid, 33);
    assert.deepEqual(resolveUser({ ...base, imageUser: '4242:4343' }, passwd, groups), { uid: 4242, gid: 4343, additionalGids: [4343] });
    assert.deepEqual(resolveUser({ ...base, imageUser: '4242' }, passwd, groups), { uid: 4242, gid: 0, additionalGids: [0] });
  });
  it('lets run_as_user, run_as_group and run_as_username win over the image', () => {
    assert.deepEqual(resolveUser({ ...base, imageUser: 'www', runAsUser: 1000 }, passwd, groups).uid, 1000);
    assert.deepEqual(resolveUser({ ...base, imageUser: 'www', runAsUser: 1000, runAsGroup: 7 }, passwd, groups), { uid: 1000, gid: 7, additionalGids: [7, 10, 50] });
    assert.deepEqual(resolveUser({ ...base, runAsUsername: 'alice' }, passwd, groups).uid, 1000);
  });
  it('adds requested groups; Strict uses only those', () => {
    assert.deepEqual(resolveUser({ ...base, imageUser: 'alice', supplementalGroups: [5000, 10] }, passwd, groups).additionalGids, [1000, 10, 50, 5000]);
    assert.deepEqual(resolveUser({ ...base, imageUser: 'alice', supplementalGroups: [5000], policy: 'Strict' }, passwd, groups).additionalGids, [1000, 5000]);
  });
  it('refuses run_as_group without run_as_user or run_as_username', () => {
    assert.throws(() => resolveUser({ ...base, imageUser: 'www', runAsGroup: 7 }, passwd, groups), /run_as_group is set without run_as_user or run_as_username/);
    assert.equal(resolveUser({ ...base, runAsUsername: 'alice', runAsGroup: 7 }, passwd, groups).gid, 7);
  });
  it('refuses names the image does not know', () => {
    assert.throws(() => resolveUser({ ...base, imageUser: 'nobody' }, passwd, groups), UserResolutionError);
    assert.throws(() => resolveUser({ ...base, imageUser: 'alice:nogroup' }, passwd, groups), /group "nogroup"/);
    assert.throws(() => resolveUser({ ...base, runAsUsername: 'ghost' }, [], []), /"ghost" is not in the image's \/etc\/passwd/);
  });
});
