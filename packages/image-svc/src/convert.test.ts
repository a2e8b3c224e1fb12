import { test } from 'node:test';
import assert from 'node:assert/strict';
import { userOfImage } from './convert.js';

test('image users map to a uid or a username', () => {
  assert.deepEqual(userOfImage(''), { username: '' });
  assert.deepEqual(userOfImage('1234'), { uid: '1234', username: '' });
  assert.deepEqual(userOfImage('0:0'), { uid: '0', username: '' });
  assert.deepEqual(userOfImage('nobody'), { username: 'nobody' });
  assert.deepEqual(userOfImage('www:www'), { username: 'www' });
});
