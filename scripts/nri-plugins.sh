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
  if [ -f "$dir/complete" ]; then
    echo "$bin"
    exit 0
  fi
  mkdir -p "$CACHE_ROOT"
  exec 9>"$CACHE_ROOT/.lock"
  flock 9
  if [ -f "$dir/complete" ]; then
    echo "$bin"
    exit 0
  fi
  if [ ! -x "$GO" ]; then
    echo "nri-plugins: Go is needed to build the NRI test plugin (looked for go on PATH and /usr/local/go/bin/go)" >&2
    exit 1
  fi

  echo "nri-plugins: building the NRI test plugin against containerd/nri $version into $dir" >&2
  stage="$dir.tmp-$$"
  rm -rf "$stage"
  mkdir -p "$stage/bin"
  trap 'rm -rf "$stage"' EXIT
  export GOFLAGS="-buildvcs=false -mod=readonly"
  export CGO_ENABLED=0
  (cd "$MODULE_DIR" && "$GO" build -trimpath -ldflags "-s -w" -o "$stage/bin/nri-test-plugin" ./test-plugin)
  [ -x "$stage/bin/nri-test-plugin" ] || { echo "nri-plugins: the build made no nri-test-plugin" >&2; exit 1; }
  touch "$stage/complete"
  rm -rf "$dir"
  mv "$stage" "$dir"
  trap - EXIT
  # Builds of other versions or module files are not needed any more.
  find "$CACHE_ROOT" -mindepth 1 -maxdepth 1 -type d ! -name "$(basename "$dir")" ! -name '*.tmp-*' -exec rm -rf {} +
  echo "$bin"
}

main "$@"
