#!/usr/bin/env bash
# Runs every test: unit tests of each package, then the end-to-end suite against real runc, conmon,
# CNI, journald and a local registry. Installs and builds whatever is missing first.
set -euo pipefail

cd "$(dirname "$0")/.."
export TURBO_TELEMETRY_DISABLED=1
bash scripts/setup.sh --no-start

echo "== unit tests"
pnpm turbo run test --filter='./packages/*' --output-logs=new-only --log-order=grouped --concurrency=1

echo "== end-to-end tests"
cd e2e
node --test --test-concurrency=1 --test-reporter=spec dist/
