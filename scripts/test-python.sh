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

# The fresh venv scripts/test.sh made while the C++ built, torch and scipy installed; else one of our own.
venv=$work/venv
if [[ -n ${MLAPLAN_PYENV:-} && -d $MLAPLAN_PYENV ]]; then
  while [[ ! -e $MLAPLAN_PYENV/rc ]]; do sleep 1; done
  if [[ $(cat "$MLAPLAN_PYENV/rc") == 0 ]]; then
    venv=$MLAPLAN_PYENV/venv
  else
    echo "test-python.sh: installing torch in the background failed (see below); installing it here" >&2
    cat "$MLAPLAN_PYENV/log" >&2
  fi
fi
[[ -x $venv/bin/python ]] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check "${settings[@]}" "$root[test,torch,calibrate]"
python=$venv/bin/python
# From outside the source folder, so `import mlaplan` finds the installed package, not python/. On every
# core (pytest-xdist): most of the time is subprocesses and torch on one thread each.
cd "$work"
"$python" -m pytest -q -rs -n "$(nproc)" "$root/tests/python"
