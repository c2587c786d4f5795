#!/usr/bin/env bash
# Installs missing dependencies, then configures BUILD_DIR (default: build) and builds the mlaplan
# executable, BUILD_DIR/mlaplan, and the libraries under it; the tests are scripts/test.sh's business
# (`cmake --build BUILD_DIR` builds them too). Extra arguments go to cmake's configure step.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$build" --target mlaplan_cli -j"$(nproc)"
