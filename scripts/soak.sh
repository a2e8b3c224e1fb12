#!/usr/bin/env bash
# The chaos soak under the kubelet (e2e/src/soak): pods made and deleted in waves through a
# one-node Kubernetes on a Skiff instance of its own while its daemons and the kubelet are
# SIGKILLed; then every line, restart and leftover checked. Ends with one line:
#
#   soak: N kills, N pods, N lines, N lost, N duplicated, N spurious restarts, N leaked
#
# and exits 0 only when nothing was found. Run as root on a machine set up by scripts/setup.sh.
#
#   scripts/soak.sh [--minutes M] [--wave-size N] [--wave-seconds S] [--lines-per-second L]
#                   [--kill-min S] [--kill-max S] [--kubelet-kill-every K]
#   defaults: 30 minutes, 40 pods a wave, a wave every 30 s, 50 lines/s, a kill every 5-20 s,
#   the kubelet's every 6th
#
# The Kubernetes tools are those of scripts/kube-tools.sh (built once into its cache), or the
# directory SKIFF_KUBE_TOOLS_BIN names.
set -euo pipefail

cd "$(dirname "$0")/.."
main=e2e/dist/soak/main.js

# Built when the compiled soak is missing or older than one of its sources.
if [ ! -f "$main" ] || [ -n "$(find e2e/src/soak e2e/src/lib -name '*.ts' -newer "$main" -print -quit)" ]; then
  echo "soak: building e2e" >&2
  (cd e2e && pnpm exec tsc -b)
fi

if [ -z "${SKIFF_KUBE_TOOLS_BIN:-}" ]; then
  SKIFF_KUBE_TOOLS_BIN=$(bash scripts/kube-tools.sh)
  export SKIFF_KUBE_TOOLS_BIN
fi

exec node "$main" "$@"
