#!/usr/bin/env bash
# Builds the Kubernetes tools Skiff's tests run against, from their published Go modules pinned in
# tools/kubernetes/go.mod and go.sum: kubelet, kube-apiserver, kubectl, etcd, e2e_node.test, agnhost, and
# the ginkgo command that runs e2e_node.test's specs in parallel processes.
# They go into a cache directory named after the Kubernetes version and a hash of the module files, so
# a second run only checks them. Prints that directory's bin/ on stdout; progress goes to stderr.
#   --print-dir   print the bin directory without building (it may not exist yet)
set -euo pipefail

# All of it in one function, which bash reads whole before running: an edit to this file while a
# long build runs cannot change what that build does next.
main() {
  cd "$(dirname "$0")/.."
  MODULE_DIR=tools/kubernetes
  CACHE_ROOT=${SKIFF_KUBE_TOOLS_CACHE:-/var/cache/skiff/kube-tools}
  GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
  # shellcheck source=lib/build-cache.sh
  . scripts/lib/build-cache.sh

  version=$(awk '$1 == "k8s.io/kubernetes" { print $2 }' "$MODULE_DIR/go.mod")
  etcd_version=$(awk '$1 == "go.etcd.io/etcd/server/v3" { print $2 }' "$MODULE_DIR/go.mod")
  [ -n "$version" ] || { echo "kube-tools: no k8s.io/kubernetes requirement in $MODULE_DIR/go.mod" >&2; exit 1; }
  # Raise RECIPE when the way the tools are built changes, so that caches built the old way are not used.
  RECIPE=2
  key=$(module_cache_key "$MODULE_DIR" "$RECIPE")
  dir="$CACHE_ROOT/$version-$key"
  bin="$dir/bin"

  if [ "${1:-}" = "--print-dir" ]; then
    echo "$bin"
    exit 0
  fi

  build_into_cache "$CACHE_ROOT" "$dir" build_kube_tools
  echo "$bin"
}

# The tools into STAGE/bin (the variables are main's).
build_kube_tools() {
  local stage=$1
  if [ ! -x "$GO" ]; then
    echo "kube-tools: Go is needed to build the Kubernetes test tools (looked for go on PATH and /usr/local/go/bin/go)" >&2
    exit 1
  fi

  echo "kube-tools: building Kubernetes $version and etcd $etcd_version into $dir (tens of minutes the first time)" >&2
  local minor=${version#v1.}
  minor=${minor%%.*}
  local build_date ldflags pkg tool
  build_date=$(date -u -d "@$(stat -c %Y "$MODULE_DIR/go.sum")" +%Y-%m-%dT%H:%M:%SZ)
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitCommit=module-$version -X $pkg.gitTreeState=clean -X $pkg.buildDate=$build_date"
  done

  mkdir -p "$stage/bin"
  export GOFLAGS="-buildvcs=false -mod=readonly"
  export CGO_ENABLED=0
  (
    cd "$MODULE_DIR"
    "$GO" build -trimpath -ldflags "$ldflags" -o "$stage/bin/" \
      k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl \
      k8s.io/kubernetes/test/images/agnhost github.com/onsi/ginkgo/v2/ginkgo
    "$GO" build -trimpath -ldflags "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=module-$etcd_version" \
      -o "$stage/bin/etcd" go.etcd.io/etcd/server/v3
    "$GO" test -c -trimpath -ldflags "$ldflags" -o "$stage/bin/e2e_node.test" k8s.io/kubernetes/test/e2e_node
  )
  "$stage/bin/kubelet" --version >&2
  for tool in kubelet kube-apiserver kubectl etcd e2e_node.test agnhost ginkgo; do
    [ -x "$stage/bin/$tool" ] || { echo "kube-tools: the build made no $tool" >&2; exit 1; }
  done
}

main "$@"
