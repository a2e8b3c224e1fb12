import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import { StatusError } from '@skiff/common';
import type { cri } from '@skiff/proto';
import { podUserNamespace, podWithOverlappingIds } from './user-namespace.js';

function userns(mode: string, uids: [number, number, number][], gids = uids): cri.UserNamespace__Output {
  const mapping = ([host_id, container_id, length]: [number, number, number]) => ({ host_id, container_id, length });
  return { mode, uids: uids.map(mapping), gids: gids.map(mapping) } as cri.UserNamespace__Output;
}

describe('pod user namespaces', () => {
  it('maps container id 0 of a POD namespace; NODE and no options mean the host', () => {
    assert.deepEqual(podUserNamespace(userns('POD', [[65536, 0, 65536]])), {
      uid: { containerID: 0, hostID: 65536, size: 65536 },
      gid: { containerID: 0, hostID: 65536, size: 65536 },
    });
    assert.equal(podUserNamespace(userns('NODE', [])), undefined);
    assert.equal(podUserNamespace(null), undefined);
  });

  it('refuses every shape this runtime cannot honour, naming it', () => {
    const cases: [cri.UserNamespace__Output, RegExp][] = [
      [userns('CONTAINER', [[65536, 0, 65536]]), /mode CONTAINER is not supported/],
      [userns('TARGET', [[65536, 0, 65536]]), /mode TARGET/],
      [userns('POD', [[65536, 0, 100], [70000, 100, 100]]), /exactly one uid mapping and one gid mapping/],
      [userns('POD', [[65536, 1, 65536]]), /container uid 0 must be mapped/],
      [userns('POD', [[65536, 0, 0]]), /length 0/],
      [userns('POD', [[65536, 0, 65536]], [[65536, 0, 1000]]), /differ in shape/],
      [userns('POD', [[4294967000, 0, 65536]]), /goes past the last uid/],
    ];
    for (const [options, message] of cases) assert.throws(() => podUserNamespace(options), message);
  });

  it("never maps the host's own users: host ids below 65536 are refused, 65536 is the first taken", () => {
    const cases: [cri.UserNamespace__Output, RegExp][] = [
      [userns('POD', [[0, 0, 65536]]), /the uid mapping starts at host uid 0; host uids below 65536 belong to the host's own users \(0 is its root\)/],
      [userns('POD', [[1000, 0, 65536]]), /starts at host uid 1000/],
      [userns('POD', [[65535, 0, 65536]]), /starts at host uid 65535/],
      [userns('POD', [[65536, 0, 65536]], [[0, 0, 65536]]), /the gid mapping starts at host gid 0/],
    ];
    for (const [options, message] of cases) assert.throws(() => podUserNamespace(options), (err: unknown) => err instanceof StatusError && err.code === status.INVALID_ARGUMENT && message.test(err.message));
    assert.equal(podUserNamespace(userns('POD', [[65536, 0, 65536]]))?.uid.hostID, 65536);
  });

  it('keeps to the configured range of host ids, uids and gids alike', () => {
    const allowed = { first: 1 << 30, count: 4 * 65536 };
    assert.equal(podUserNamespace(userns('POD', [[(1 << 30) + 3 * 65536, 0, 65536]]), allowed)?.gid.hostID, (1 << 30) + 3 * 65536);
    for (const [uids, gids] of [
      [[[65536, 0, 65536]], [[65536, 0, 65536]]],
      [[[(1 << 30) + 3 * 65536 + 1, 0, 65536]], [[(1 << 30) + 3 * 65536 + 1, 0, 65536]]],
      [[[1 << 30, 0, 65536]], [[(1 << 30) - 65536, 0, 65536]]],
    ] as [number, number, number][][][]) {
      assert.throws(() => podUserNamespace(userns('POD', uids, gids), allowed), /is outside the host ids this node gives pods, 1073741824\+262144 \(runtime.userns_id_range\)/);
    }
  });

  it('finds a pod whose host range overlaps', () => {
    const mine = podUserNamespace(userns('POD', [[131072, 0, 65536]]))!;
    const others = [
      { id: 'host-users' },
      { id: 'below', userns: podUserNamespace(userns('POD', [[65536, 0, 65536]]))! },
      { id: 'inside', userns: podUserNamespace(userns('POD', [[196607, 0, 10]]))! },
    ];
    assert.equal(podWithOverlappingIds(mine, others.slice(0, 2)), undefined);
    assert.equal(podWithOverlappingIds(mine, others), 'inside');
  });
});
