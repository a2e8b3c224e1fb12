import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ContractViolation } from './contract-error.js';
import { LOGS_STATUS_PATH, logsContainerPath, matchLogsRoute, parseTrackContainerRequest } from './logs-control.js';

const ID = 'a'.repeat(64);

describe('logs-control routes', () => {
  it('names each container call by its method and path, as logsContainerPath writes them', () => {
    assert.deepEqual(matchLogsRoute('PUT', logsContainerPath(ID)), { call: 'track', containerId: ID });
    assert.deepEqual(matchLogsRoute('DELETE', logsContainerPath(ID)), { call: 'forget', containerId: ID });
    assert.deepEqual(matchLogsRoute('POST', logsContainerPath(ID, 'flush')), { call: 'flush', containerId: ID });
    assert.deepEqual(matchLogsRoute('POST', logsContainerPath(ID, 'reopen')), { call: 'reopen', containerId: ID });
    assert.deepEqual(matchLogsRoute('GET', LOGS_STATUS_PATH), { call: 'status' });
  });

  it('tells a path that does not take the method from a path that does not exist', () => {
    assert.equal(matchLogsRoute('POST', LOGS_STATUS_PATH), 'method');
    assert.equal(matchLogsRoute('GET', logsContainerPath(ID)), 'method');
    assert.equal(matchLogsRoute('POST', logsContainerPath(ID)), 'method');
    assert.equal(matchLogsRoute('PUT', logsContainerPath(ID, 'flush')), 'method');
    assert.equal(matchLogsRoute('GET', '/v1/other'), undefined);
    assert.equal(matchLogsRoute('POST', `/v1/containers/${ID}/rotate`), undefined);
    assert.equal(matchLogsRoute('PUT', `${logsContainerPath(ID)}/`), undefined);
    assert.equal(matchLogsRoute('GET', `${LOGS_STATUS_PATH}?x=1`), undefined);
  });

  it('takes only container ids of 8 to 128 lowercase hex digits, so no id can leave its path', () => {
    assert.deepEqual(matchLogsRoute('PUT', logsContainerPath('0123abcd')), { call: 'track', containerId: '0123abcd' });
    assert.deepEqual(matchLogsRoute('PUT', logsContainerPath('f'.repeat(128))), { call: 'track', containerId: 'f'.repeat(128) });
    for (const id of ['0123abc', 'f'.repeat(129), 'ABCDEF01', '../../etc', `${ID}%2f..`, '']) {
      assert.equal(matchLogsRoute('PUT', `/v1/containers/${id}`), undefined, id);
    }
  });
});

describe('TrackContainerRequest', () => {
  it('takes an absolute log path', () => {
    assert.deepEqual(parseTrackContainerRequest({ logPath: '/var/log/pods/p/c/0.log' }), { logPath: '/var/log/pods/p/c/0.log' });
  });

  it('refuses anything else, naming the field', () => {
    assert.throws(() => parseTrackContainerRequest('x'), /^ContractViolation: request body must be a JSON object$/);
    assert.throws(() => parseTrackContainerRequest(null), ContractViolation);
    assert.throws(() => parseTrackContainerRequest([]), /request body must be a JSON object/);
    assert.throws(() => parseTrackContainerRequest({}), /logPath must be an absolute path/);
    assert.throws(() => parseTrackContainerRequest({ logPath: 'relative/0.log' }), /logPath must be an absolute path/);
    assert.throws(() => parseTrackContainerRequest({ logPath: 7 }), /logPath must be an absolute path/);
    assert.throws(() => parseTrackContainerRequest({ logPath: '/a.log', follow: true }), /follow is not part of the request/);
  });
});
