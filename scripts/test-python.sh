#!/usr/bin/env bash
# The Python package as a user gets it: a fresh virtual environment, `pip install .` (scikit-build-core
# and nanobind from PyPI), then pytest on tests/python. CPU only by default (the CUDA tests skip);
# --cuda keeps the GPU planner in the build. (scripts/gpu-check.sh builds and tests the package on a
# machine without network, into a folder, with the system's python3.)
# The torch extra comes too (about 5 GB from PyPI), so the prefill executor's CPU tests run.
# Usage: scripts/test-python.sh [--cuda]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cuda=OFF
for arg in "$@"; do
  case $arg in
    --cuda) cuda=ON ;;
    *) echo "usage: $0 [--cuda]" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d /tmp/mlaplan-python.XXXXXX)
trap 'rm -rf "$work"' EXIT
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
settings=(--config-settings=cmake.define.MLAPLAN_ENABLE_CUDA=$cuda --config-settings=build-dir="$work/build")

python3 -m venv "$work/venv"
# Wheels that scripts/test.sh fetched while the C++ built: install torch from them, else from PyPI.
if [[ -n ${MLAPLAN_WHEELS:-} && -d $MLAPLAN_WHEELS ]]; then
  while [[ ! -e $MLAPLAN_WHEELS/rc ]]; do sleep 1; done
  if [[ $(cat "$MLAPLAN_WHEELS/rc") == 0 ]]; then
    "$work/venv/bin/python" -m pip install -q --disable-pip-version-check --no-index --find-links "$MLAPLAN_WHEELS/wheels" torch scipy pytest
  else
    echo "test-python.sh: fetching the wheels failed (see below); installing from PyPI" >&2
    cat "$MLAPLAN_WHEELS/log" >&2
  fi
fi
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check "${settings[@]}" "$root[test,torch,calibrate]"
python=$work/venv/bin/python
# From outside the source folder, so `import mlaplan` finds the installed package, not python/.
cd "$work"
"$python" -m pytest -q -rs "$root/tests/python"
