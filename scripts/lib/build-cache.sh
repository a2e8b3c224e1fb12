# Sourced by the scripts that build tools into a cache directory named after their version and a
# hash of what they are built from (kube-tools.sh, nri-plugins.sh, runc.sh, critest.sh).
#
#   module_cache_key MODULE_DIR RECIPE
#
# Prints twelve hex digits naming a build of the module pinned by MODULE_DIR's go.mod and go.sum
# the way RECIPE (a number the script raises when it builds differently) says.
#
#   build_into_cache CACHE_ROOT DIR BUILD_FUNCTION
#
# Returns at once when DIR is complete. Otherwise, holding CACHE_ROOT/.lock (one build at a time:
# whoever waited finds what the other one built), it calls BUILD_FUNCTION STAGE with STAGE an empty
# directory beside DIR, marks STAGE complete, moves it into place in one rename and removes the
# cache's other builds, which nothing needs any more. A build that fails leaves no STAGE behind.
module_cache_key() {
  (cat "$1/go.mod" "$1/go.sum"; echo "recipe $2") | sha256sum | cut -c1-12
}

build_into_cache() {
  local root=$1 dir=$2 build=$3
  [ -f "$dir/complete" ] && return 0
  mkdir -p "$root"
  exec 9>"$root/.lock"
  flock 9
  if [ ! -f "$dir/complete" ]; then
    BUILD_CACHE_STAGE="$dir.tmp-$$"
    rm -rf "$BUILD_CACHE_STAGE"
    mkdir -p "$BUILD_CACHE_STAGE"
    trap 'rm -rf "$BUILD_CACHE_STAGE"' EXIT
    "$build" "$BUILD_CACHE_STAGE"
    touch "$BUILD_CACHE_STAGE/complete"
    rm -rf "$dir"
    mv "$BUILD_CACHE_STAGE" "$dir"
    trap - EXIT
    find "$root" -mindepth 1 -maxdepth 1 -type d ! -name "$(basename "$dir")" ! -name '*.tmp-*' -exec rm -rf {} +
  fi
  exec 9>&-
}
