#!/usr/bin/env bash
# Installs the runc Skiff runs at /usr/local/sbin/runc (runtime.runc's default).
#
# Debian 12's runc (1.1.5) lacks the fixes of runc's later container escapes (mount races fixed in
# 1.2.8 / 1.3.3, a /dev symlink of an image writing to the host fixed in 1.3.6 / 1.4.3). When the
# Debian package is at least that new, /usr/local/sbin/runc is a link to it; otherwise runc is built
# from its published Go module, pinned in tools/runc/go.mod and go.sum, with cgo and Debian's
# libseccomp, into a cache directory named after its version and a hash of the module files, so a
# second run only checks it. Debian's own /usr/sbin/runc is left as it is.
# Prints the installed runc's path on stdout; progress goes to stderr.
#   --print-version   print the pinned version (without the v) and exit
set -euo pipefail

cd "$(dirname "$0")/.."
MODULE_DIR=tools/runc
CACHE_ROOT=${SKIFF_RUNC_CACHE:-/var/cache/skiff/runc}
DEST=${SKIFF_RUNC_DEST:-/usr/local/sbin/runc}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
# shellcheck source=lib/build-cache.sh
. scripts/lib/build-cache.sh

version=$(awk '{ for (i = 1; i < NF; i++) if ($i == "github.com/opencontainers/runc") { print $(i + 1); exit } }' "$MODULE_DIR/go.mod")
[ -n "$version" ] || { echo "runc: no github.com/opencontainers/runc requirement in $MODULE_DIR/go.mod" >&2; exit 1; }
if [ "${1:-}" = "--print-version" ]; then
  echo "${version#v}"
  exit 0
fi

# The first releases of each maintained line with every known escape fixed (keep in step with
# RUNC_FIXED_RELEASES in packages/runtime-svc/src/oci/runtime-version.ts).
debian_runc_is_fixed() {
  local v=$1
  if dpkg --compare-versions "$v" ge 1.4.3; then return 0; fi
  dpkg --compare-versions "$v" ge 1.3.6 && dpkg --compare-versions "$v" lt 1.4~
}

install_link_or_file() { # source: replaces DEST in one rename, so a running runtime never sees half a file
  local tmp
  tmp="$(dirname "$DEST")/.runc.tmp-$$"
  install -d -m 0755 "$(dirname "$DEST")"
  if [ "${2:-}" = link ]; then
    ln -sfn "$1" "$tmp"
  else
    install -m 0755 "$1" "$tmp"
  fi
  mv -Tf "$tmp" "$DEST"
}

debian_version=$(dpkg-query -W -f='${Version}' runc 2>/dev/null || true)
if [ -n "$debian_version" ] && [ -x /usr/sbin/runc ] && debian_runc_is_fixed "${debian_version%%+*}"; then
  [ "$(readlink "$DEST" 2>/dev/null || true)" = /usr/sbin/runc ] || install_link_or_file /usr/sbin/runc link
  echo "runc: Debian's runc $debian_version has the fixes; $DEST links to it" >&2
  echo "$DEST"
  exit 0
fi

# Raise RECIPE when the way runc is built changes, so that binaries built the old way are not used.
RECIPE=1
key=$(module_cache_key "$MODULE_DIR" "$RECIPE")
dir="$CACHE_ROOT/$version-$key"
built="$dir/runc"

# runc into STAGE.
build_runc() {
  local stage=$1 module_sum
  if [ ! -x "$GO" ]; then
    echo "runc: Go is needed to build runc $version (looked for go on PATH and /usr/local/go/bin/go)" >&2
    exit 1
  fi
  if ! pkg-config --exists libseccomp; then
    echo "runc: libseccomp's development files are needed to build runc (Debian package libseccomp-dev, with pkg-config)" >&2
    exit 1
  fi
  echo "runc: building runc $version into $dir (minutes the first time)" >&2
  # runc takes its version from the VERSION file its module holds; the commit it names is the
  # module's content hash, as a module carries no git metadata.
  module_sum=$(awk -v v="$version" '$1 == "github.com/opencontainers/runc" && $2 == v { print $3 }' "$MODULE_DIR/go.sum")
  (
    cd "$MODULE_DIR"
    # As runc's Makefile builds it: cgo (libcontainer/nsenter, libseccomp), a PIE, its build tags.
    GOFLAGS="-buildvcs=false -mod=readonly" CGO_ENABLED=1 "$GO" build -trimpath -buildmode=pie \
      -tags "seccomp urfave_cli_no_docs" \
      -ldflags "-X main.gitCommit=module-$version-$module_sum" \
      -o "$stage/runc" github.com/opencontainers/runc
  )
  "$stage/runc" --version >&2
  "$stage/runc" --version | grep -q '^libseccomp: ' || { echo "runc: the build has no seccomp support" >&2; exit 1; }
}

build_into_cache "$CACHE_ROOT" "$dir" build_runc

if ! cmp -s "$built" "$DEST"; then
  install_link_or_file "$built"
  echo "runc: installed runc $version at $DEST" >&2
fi
echo "$DEST"
