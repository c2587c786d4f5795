#!/usr/bin/env bash
# Installs missing dependencies, then configures and builds mlaplan into BUILD_DIR (default: build).
# The executable lands at BUILD_DIR/mlaplan. Extra arguments go to cmake's configure step.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$build" -j"$(nproc)"
