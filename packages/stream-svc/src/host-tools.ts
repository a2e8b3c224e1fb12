import type { HostTool } from '@skiff/common';
import { PYTHON_PATH } from './attach-relay.js';
import { BUSYBOX, NSENTER } from './port-forward.js';

/** Programs the streams run: the attach relay (attach, terminal exec) and the port-forward dialer. */
export const STREAM_TOOLS: readonly HostTool[] = [
  { name: 'python3', path: PYTHON_PATH, debianPackage: 'python3' },
  { name: 'nsenter', path: NSENTER, debianPackage: 'util-linux' },
  { name: 'busybox', path: BUSYBOX, debianPackage: 'busybox-static' },
];
