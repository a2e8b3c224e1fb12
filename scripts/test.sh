#!/usr/bin/env bash
# Runs every test: unit tests of each package and of the benchmarks' pure parts, then the end-to-end
# suite against real runc, conmon, CNI, journald and a local registry. Installs and builds whatever is
# missing first.
set -euo pipefail

cd "$(dirname "$0")/.."
export TURBO_TELEMETRY_DISABLED=1
bash scripts/setup.sh --no-start

# The Kubernetes tools the kubelet tests run are built (or found in their cache) while the unit tests run.
tools_log=$(mktemp)
bash scripts/kube-tools.sh >"$tools_log" 2>&1 &
tools_pid=$!
trap 'kill "$tools_pid" 2>/dev/null || true; rm -f "$tools_log"' EXIT

echo "== unit tests"
pnpm turbo run test --filter='./packages/*' --filter='./bench' --output-logs=new-only --log-order=grouped --concurrency=1

echo "== Kubernetes test tools"
if ! wait "$tools_pid"; then
  cat "$tools_log" >&2
  echo "test: scripts/kube-tools.sh failed" >&2
  exit 1
fi
SKIFF_KUBE_TOOLS_BIN=$(tail -n 1 "$tools_log")
export SKIFF_KUBE_TOOLS_BIN
"$SKIFF_KUBE_TOOLS_BIN/kubelet" --version

echo "== end-to-end tests"
cd e2e
SKIFF_TESTS_RUN_MINUTES=60 node ../scripts/node-tests.mjs dist --test-concurrency=1

# The runtime tests again with every pod under gVisor, but for the files whose pods all name their
# handler (runtime-gvisor's are runsc's; runtime-pod-namespaces', runtime-userns-host-access's and
# runtime-pauseless's are runc's, host namespaces, user namespaces and pods without a pause being
# runc's alone): they would run the same again.
echo "== runtime end-to-end tests under gVisor (runsc)"
SKIFF_E2E_RUNTIME_HANDLER=runsc SKIFF_TESTS_RUN_MINUTES=30 node ../scripts/node-tests.mjs dist '--only=^runtime-(?!gvisor\.|pod-namespaces\.|userns-host-access\.|pauseless\.)' --test-concurrency=1
