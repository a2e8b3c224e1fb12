#!/usr/bin/env bash
# Installs what Skiff needs (Debian packages, runc through scripts/runc.sh, pnpm, node modules), builds
# it (runtime-svc's C helpers too), installs the `skiff` command and a default configuration, then
# starts every service with `skiff up --detach`.
#   --no-start   install and build only
set -euo pipefail

cd "$(dirname "$0")/.."
REPO=$(pwd)
PNPM_VERSION=10.34.8
# turbo's anonymous usage telemetry stays off, and so does the notice it prints on a fresh machine.
export TURBO_TELEMETRY_DISABLED=1
START=1
for arg in "$@"; do
  case "$arg" in
    --no-start) START=0 ;;
    *) echo "usage: $0 [--no-start]" >&2; exit 2 ;;
  esac
done

if [ "$(id -u)" -ne 0 ]; then
  echo "setup: Skiff runs containers and must be set up as root" >&2
  exit 1
fi

missing=()
while read -r pkg; do
  [ -z "$pkg" ] && continue
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' scripts/debian-packages.txt)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# gVisor's runsc for the "runsc" handler: bookworm's own is from 2022 and lacks what Skiff relies
# on, so it comes from bookworm-backports.
RUNSC_MIN=0.0~20240729
runsc_version=$(dpkg-query -W -f='${Version}' runsc 2>/dev/null || true)
if [ -z "$runsc_version" ] || ! dpkg --compare-versions "$runsc_version" ge "$RUNSC_MIN"; then
  if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo 'deb http://deb.debian.org/debian bookworm-backports main' > /etc/apt/sources.list.d/bookworm-backports.list
  fi
  echo "setup: installing runsc (gVisor) from bookworm-backports"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends -t bookworm-backports runsc >/dev/null
fi

# runc with every known container escape fixed, at /usr/local/sbin/runc (runtime.runc's default):
# Debian's when it is new enough, else built from its pinned Go module (cached under /var/cache/skiff/runc).
scripts/runc.sh >/dev/null

if [ "$(pnpm --version 2>/dev/null || true)" != "$PNPM_VERSION" ]; then
  echo "setup: installing pnpm $PNPM_VERSION"
  npm install -g --silent "pnpm@$PNPM_VERSION" >/dev/null
fi

echo "setup: installing node modules and building"
CI=true pnpm install --frozen-lockfile --reporter=silent
# Also off for later turbo runs on this machine that are not started from these scripts.
pnpm exec turbo telemetry disable >/dev/null 2>&1 || echo "setup: could not turn turbo telemetry off for this user" >&2
pnpm turbo run build --output-logs=errors-only

echo "setup: building runtime-svc's helpers"
HELPERS=packages/runtime-svc/helpers
install -d -m 0755 "$HELPERS/bin"
for src in "$HELPERS"/*.c; do
  bin="$HELPERS/bin/$(basename "$src" .c)"
  # Rebuilt when the source changed; written under another name first so a running service never sees half a file.
  if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ]; then
    gcc -O2 -Wall -Wextra -Werror -o "$bin.tmp" "$src"
    mv -f "$bin.tmp" "$bin"
  fi
done

install -d -m 0755 /usr/local/bin
# bin/skiff runs the supervisor script for `skiff up`, dist/main.js for the rest, with the node that built it.
cat > /usr/local/bin/skiff <<WRAPPER
#!/bin/sh
SKIFF_NODE="$(command -v node)"
export SKIFF_NODE
exec "$REPO/packages/skiff/bin/skiff" "\$@"
WRAPPER
chmod 0755 /usr/local/bin/skiff

if [ ! -e /etc/skiff/skiff.toml ]; then
  install -d -m 0755 /etc/skiff
  install -m 0644 config/skiff.toml /etc/skiff/skiff.toml
  echo "setup: wrote the default configuration to /etc/skiff/skiff.toml"
fi

if [ "$START" -eq 1 ]; then
  if [ -d /run/systemd/system ]; then
    # systemd runs this machine: it supervises the services, from the units skiff writes.
    skiff install-units
    systemctl start skiff.target
  else
    skiff up --detach
  fi
fi
