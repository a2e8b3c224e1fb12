#!/usr/bin/env bash
# Runs the CRI validation suite, critest (sigs.k8s.io/cri-tools), against a Skiff instance of its
# own and ends with the line
#   critest: N passed, N failed, N skipped
# critest and crictl are built from their published Go module, pinned in tools/cri-tools/go.mod and
# go.sum, into a cache directory named after the cri-tools version and a hash of the module files,
# so a second run only checks them; the images the suite pulls are built from Debian packages
# (cached) and served by a local registry (see e2e/README.md). Exit status 0 when no spec failed.
#   --build             only build critest, crictl and ginkgo; print their bin directory on stdout
#   --print-dir         print that bin directory without building (it may not exist yet)
#   --handler runsc     run the suite with -runtime-handler=runsc (gVisor)
#   --focus RE          only the specs whose text matches RE (Ginkgo's focus)
#   --skip RE           leave out the specs whose text matches RE as well
#   --procs N           specs run at once (default 4; critest runs its Serial specs alone)
#   --report-dir DIR    where the JSON and JUnit reports, critest's output and Skiff's logs go
#                       (default /var/tmp/skiff-critest/<time>)
# Progress goes to stderr.
set -euo pipefail

# All of it in one function, which bash reads whole before running: an edit to this file while a
# long build runs cannot change what that build does next.
main() {
  cd "$(dirname "$0")/.."
  MODULE_DIR=tools/cri-tools
  CACHE_ROOT=${SKIFF_CRITEST_CACHE:-/var/cache/skiff/cri-tools}
  GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
  # shellcheck source=lib/build-cache.sh
  . scripts/lib/build-cache.sh

  version=$(awk '{ for (i = 1; i < NF; i++) if ($i == "sigs.k8s.io/cri-tools") { print $(i + 1); exit } }' "$MODULE_DIR/go.mod")
  [ -n "$version" ] || { echo "critest: no sigs.k8s.io/cri-tools requirement in $MODULE_DIR/go.mod" >&2; exit 1; }
  # Raise RECIPE when the way the tools are built changes, so that caches built the old way are not used.
  RECIPE=1
  key=$(module_cache_key "$MODULE_DIR" "$RECIPE")
  dir="$CACHE_ROOT/$version-$key"
  bin="$dir/bin"

  case "${1:-}" in
    --print-dir)
      echo "$bin"
      exit 0
      ;;
    --build)
      build
      echo "$bin"
      exit 0
      ;;
  esac

  if [ "$(id -u)" -ne 0 ]; then
    echo "critest: run as root (Skiff runs containers)" >&2
    exit 1
  fi
  local runner=e2e/dist/conformance/critest.js
  if [ ! -f "$runner" ]; then
    echo "critest: $runner is missing: build first (pnpm turbo run build)" >&2
    exit 1
  fi
  build
  exec node "$runner" --critest-bin "$bin" "$@"
}

build() {
  build_into_cache "$CACHE_ROOT" "$dir" build_cri_tools
}

# critest, crictl and the ginkgo command into STAGE/bin (the variables are main's).
build_cri_tools() {
  local stage=$1
  if [ ! -x "$GO" ]; then
    echo "critest: Go is needed to build critest (looked for go on PATH and /usr/local/go/bin/go)" >&2
    exit 1
  fi
  echo "critest: building cri-tools $version into $dir (minutes the first time)" >&2
  # As cri-tools' Makefile builds them: no cgo, the version (without the v) in pkg/version, critest
  # as the test binary of cmd/critest.
  local ldflags="-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=${version#v}"
  mkdir -p "$stage/bin"
  export GOFLAGS="-buildvcs=false -mod=readonly"
  export CGO_ENABLED=0
  (
    cd "$MODULE_DIR"
    "$GO" build -trimpath -ldflags "$ldflags" -o "$stage/bin/crictl" sigs.k8s.io/cri-tools/cmd/crictl
    "$GO" test -c -trimpath -ldflags "$ldflags" -o "$stage/bin/critest" sigs.k8s.io/cri-tools/cmd/critest
    # critest runs its specs in parallel through the ginkgo command, which it looks for on PATH.
    "$GO" build -trimpath -ldflags "-s -w" -o "$stage/bin/ginkgo" github.com/onsi/ginkgo/v2/ginkgo
  )
  local tool
  for tool in critest crictl ginkgo; do
    [ -x "$stage/bin/$tool" ] || { echo "critest: the build made no $tool" >&2; exit 1; }
  done
  "$stage/bin/critest" --version >&2
}

main "$@"
