import type { cri } from '@skiff/proto';
import { idsWithExitFiles } from '../conmon/exit-file.js';
import type { RuntimeContext } from '../daemon/context.js';
import { compareCreationTimes } from '../listing/creation-order.js';
import { matchesLabels } from '../listing/label-selector.js';
import type { SandboxRecord } from '../state/records.js';
import { sandboxIsReady } from './sandbox-state.js';
import { sandboxState } from './sandbox-view.js';

const NO_EXIT_FILES: ReadonlySet<string> = new Set();

/** Sandboxes matching a filter (id exact or prefix, state, labels), oldest first. */
export async function filterSandboxes(ctx: RuntimeContext, filter: cri.PodSandboxFilter__Output | null): Promise<{ rec: SandboxRecord; ready: boolean }[]> {
  const matching = [...ctx.state.sandboxes.values()].filter(
    (rec) => (!filter?.id || rec.id.startsWith(filter.id)) && matchesLabels(rec.labels, filter?.label_selector),
  );
  // Only a pause started under conmon (by earlier versions) has an exit file: the directory is read
  // when one is listed, not on every relist.
  const exitFiles = matching.some((rec) => rec.conmonPid !== undefined) ? await idsWithExitFiles(ctx.paths.exitDir) : NO_EXIT_FILES;
  // Each check reads /proc; run them together rather than one after another.
  const checked = await Promise.all(matching.map(async (rec) => ({ rec, ready: await sandboxIsReady(ctx, rec, exitFiles) })));
  const out = filter?.state ? checked.filter(({ ready }) => filter.state?.state === sandboxState(ready)) : checked;
  return out.sort((a, b) => compareCreationTimes(a.rec.createdAt, b.rec.createdAt));
}
