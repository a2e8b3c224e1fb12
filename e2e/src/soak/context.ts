/** What every part of the soak works on: the Skiff instance, its node, the settings, the record. */
import type { KubeNode } from '../lib/kube-node.js';
import type { RuntimeHarness } from '../lib/runtime-harness.js';
import type { KillLog } from './kills.js';
import type { SoakOptions } from './options.js';
import type { Report } from './report.js';

export interface SoakContext {
  h: RuntimeHarness;
  node: KubeNode;
  /** The busybox test image, as pulled into Skiff from the harness's registry on 127.0.0.1. */
  image: string;
  options: SoakOptions;
  report: Report;
  kills: KillLog;
  /** Host directory with one subdirectory per pod, mounted at /ctl: the soak's switches for it. */
  ctlDir: string;
  /** Every sandbox id of the soak's pods the runtime listed, to tell its leftovers from other instances'. */
  sandboxIds: Set<string>;
}
