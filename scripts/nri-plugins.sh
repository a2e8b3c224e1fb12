#!/usr/bin/env bash
# Builds the NRI plugin Skiff's NRI tests run (tools/nri-plugins: the NRI plugin stub of
# github.com/containerd/nri at the version pinned in its go.mod, from the Go module proxy). It goes
# into a cache directory named after that version and a hash of the module files, so a second run
# only checks it. Prints that directory's bin/ on stdout; progress goes to stderr.
#   --print-dir   print the bin directory without building (it may not exist yet)
set -euo pipefail

main() {
  cd "$(dirname "$0")/.."
  MODULE_DIR=tools/nri-plugins
  CACHE_ROOT=${SKIFF_NRI_PLUGINS_CACHE:-/var/cache/skiff/nri-plugins}
  GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}

  version=$(awk '($1 == "github.com/containerd/nri" || $2 == "github.com/containerd/nri") { print ($1 == "require" ? $3 : $2) }' "$MODULE_DIR/go.mod" | head -1)
  [ -n "$version" ] || { echo "nri-plugins: no github.com/containerd/nri requirement in $MODULE_DIR/go.mod" >&2; exit 1; }
  key=$( (cat "$MODULE_DIR/go.mod" "$MODULE_DIR/go.sum"; find "$MODULE_DIR" -name '*.go' -print0 | sort -z | xargs -0 cat) | sha256sum | cut -c1-12)
  dir="$CACHE_ROOT/$version-$key"
  bin="$dir/bin"

  if [ "${1:-}" = "--print-dir" ]; then
    echo "$bin"
    exit 0
  fi
  # shellcheck source=lib/build-cache.sh
  . scripts/lib/build-cache.sh
  build_into_cache "$CACHE_ROOT" "$dir" build_nri_plugins
  echo "$bin"
}

# The plugin into STAGE/bin (the variables are main's).
build_nri_plugins() {
  local stage=$1
  if [ ! -x "$GO" ]; then
    echo "nri-plugins: Go is needed to build the NRI test plugin (looked for go on PATH and /usr/local/go/bin/go)" >&2
    exit 1
  fi

  echo "nri-plugins: building the NRI test plugin against containerd/nri $version into $dir" >&2
  mkdir -p "$stage/bin"
  export GOFLAGS="-buildvcs=false -mod=readonly"
  export CGO_ENABLED=0
  (cd "$MODULE_DIR" && "$GO" build -trimpath -ldflags "-s -w" -o "$stage/bin/nri-test-plugin" ./test-plugin)
  [ -x "$stage/bin/nri-test-plugin" ] || { echo "nri-plugins: the build made no nri-test-plugin" >&2; exit 1; }
}

main "$@"
