#!/usr/bin/env bash
# Runs the Kubernetes node conformance suite (e2e_node.test, specs labelled NodeConformance, not
# Flaky nor Slow, several at once) against a Skiff instance of its own, and ends with the line
#   node-conformance: N passed, N failed, N skipped
# It needs nothing set up beyond scripts/setup.sh: it builds the Kubernetes tools (scripts/kube-tools.sh,
# cached) and the images the suite runs (from Debian packages and the tools, cached), then runs the
# node in namespaces of its own (see e2e/README.md). Exit status 0 when no spec failed.
#   --focus RE          only the specs whose text matches RE (Ginkgo's --focus)
#   --skip RE           leave out the specs whose text matches RE
#   --label-filter EXPR instead of 'NodeConformance && !Flaky && !Slow'
#   --shard K/N         the K-th of N parts of the selected specs (sorted by name, dealt out in turn)
#   --handler runsc     every pod that names no RuntimeClass runs under gVisor (runtime.default_handler)
#   --procs N           Ginkgo processes running specs at once (default 4; the Serial specs run alone)
#   --report-dir DIR    where the JSON and JUnit reports, the suite's output and the kubelet's and
#                       Skiff's logs go (default /var/tmp/skiff-node-conformance/<time>)
set -euo pipefail

cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  echo "node-conformance: run as root (the suite starts a kubelet; Skiff runs containers)" >&2
  exit 1
fi
runner=e2e/dist/conformance/node-conformance.js
if [ ! -f "$runner" ]; then
  echo "node-conformance: $runner is missing: build first (pnpm turbo run build)" >&2
  exit 1
fi
bin=$(bash scripts/kube-tools.sh)
exec node "$runner" --kube-bin "$bin" "$@"
