/**
 * NodeConformance specs that cannot run on these machines, with the reason. The runner leaves them
 * out (Ginkgo's --skip) and counts each as skipped, naming its reason; a spec is matched by a part
 * of its full text (runs of spaces count as one).
 *
 *   interface UnrunnableSpec { text, reason }
 *   UNRUNNABLE_SPECS: readonly UnrunnableSpec[]
 *   unrunnableReason(specName, specs?): string | undefined   (specs: default UNRUNNABLE_SPECS)
 *   skipPattern(spec): string        a Go regular expression for Ginkgo's --skip
 *   specTextPattern(text): string    any spec text as such an expression
 */

export interface UnrunnableSpec {
  /** A part of the spec's full text (container texts and its own, joined by spaces). */
  text: string;
  reason: string;
}

const NO_SYSTEMD =
  'restarts the kubelet (to change its configuration, or to test a restart) with `sudo systemctl`: ' +
  'PID 1 is not systemd here, so the suite runs the kubelet as a plain process, and there is no sudo';

export const UNRUNNABLE_SPECS: readonly UnrunnableSpec[] = [
  { text: '[sig-node] MirrorPod when kubelet restarts should not change container status', reason: NO_SYSTEMD },
  { text: '[sig-node] Containers Lifecycle when A node running restartable init containers reboots', reason: NO_SYSTEMD },
  { text: 'should be able to pull from private registry with credential provider', reason: NO_SYSTEMD },
  { text: '[sig-node] ImageGarbageCollect when ImageMaximumGCAge is set', reason: NO_SYSTEMD },
  { text: 'container is removed and kubelet restarts', reason: NO_SYSTEMD },
  { text: '[sig-node] KubletTLS certificate reload should reload certificates from disk', reason: NO_SYSTEMD },
  { text: '[sig-node] ReloadKubeletClientCAFileTest certificate reload should reload certificates from disk', reason: NO_SYSTEMD },
  { text: '[sig-node] Kubelet Endpoints when config is updated should be reflected in /configz', reason: NO_SYSTEMD },
  {
    text: '[sig-node] Device Plugin [Feature:DevicePlugin] DevicePlugin Can schedule a pod with a restartable init container',
    reason: 'ends by restarting the kubelet with `sudo systemctl`, to see the devices go: PID 1 is not systemd here and there is no sudo; the scheduling itself passes before that',
  },
  {
    text: '[sig-node] OOMKiller [LinuxOnly]',
    reason:
      'ends each case by restarting the kubelet with its configuration as before (even when the case changed nothing) with `sudo systemctl`: ' +
      'PID 1 is not systemd here and there is no sudo; the case itself (the OOMKilled reason) passes before that',
  },
  {
    text: '[sig-node] MirrorPodWithGracePeriod when create a mirror pod and the container runtime is temporarily down during pod termination',
    reason: 'stops and starts the container runtime as a systemd unit over D-Bus (/run/systemd/private): PID 1 is not systemd here',
  },
  {
    text: '[sig-node] PrivilegedPod should enable privileged commands',
    reason: 'proves privilege with `ip link add dummy1 type dummy`: this kernel has no dummy network device (CONFIG_DUMMY unset, no modules)',
  },
  {
    text: 'it should launch successfully even if it temporarily failed termination due to volume failing to unmount',
    reason: "needs an NFS server pod (the kernel's NFS server) and the node's NFS client: this kernel has neither (CONFIG_NFSD, CONFIG_NFS_FS unset)",
  },
  {
    text: '[sig-node] Swap [LinuxOnly] [Feature:NodeSwap] with a critical pod - should avoid swap',
    reason:
      "reads the cgroup v2 file memory.swap.max without first asking for cgroup v2, as the suite's other swap specs do " +
      '(they skip themselves); these machines have cgroup v1 only',
  },
];

const words = (text: string): string => text.replace(/\s+/g, ' ').trim();

/** The reason `specName` cannot run, from `specs` (default the node conformance suite's). */
export function unrunnableReason(specName: string, specs: readonly UnrunnableSpec[] = UNRUNNABLE_SPECS): string | undefined {
  const name = words(specName);
  return specs.find((spec) => name.includes(words(spec.text)))?.reason;
}

export function skipPattern(spec: UnrunnableSpec): string {
  return specTextPattern(spec.text);
}

/** A spec's text as a Go regular expression: every character literal, runs of spaces as one or more. */
export function specTextPattern(text: string): string {
  return words(text)
    .split(' ')
    .map((word) => word.replace(/[\\.+*?()|[\]{}^$]/g, '\\$&'))
    .join('\\s+');
}
