#!/usr/bin/env bash
# Builds mlaplan and runs the whole test suite (GPU tests report themselves skipped without a GPU).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
"$root/scripts/build.sh" "$@"
cd "$build"
ctest --output-on-failure -j"$(nproc)"
