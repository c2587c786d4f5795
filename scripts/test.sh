#!/usr/bin/env bash
# The README's test command, and all CI runs: builds mlaplan and runs the whole test suite (GPU tests
# report themselves skipped without a GPU); then the CPU suite again, built with clang,
# AddressSanitizer and UndefinedBehaviorSanitizer (the `sanitize` preset, build-sanitize/, which also
# builds the libFuzzer targets); then the Python package, built and tested in a fresh virtual
# environment (scripts/test-python.sh); then a short run of every fuzz target from that same build
# (scripts/fuzz.sh). SKIP_SANITIZE=1, SKIP_PYTHON=1 or SKIP_FUZZ=1
# leaves a stage out;
# FUZZ_SECONDS sets the seconds per fuzz target (default 15). --with-max (or WITH_MAX=1) adds a last
# stage: the MAX harness's toolchain (a 1 GB download), its host-side tests and its build
# (scripts/max-reference/build.sh). Other arguments go to scripts/build.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
with_max=${WITH_MAX:-}
build_args=()
for a in "$@"; do
  if [[ $a == --with-max ]]; then with_max=1; else build_args+=("$a"); fi
done
build=${BUILD_DIR:-$root/build}
stage() { echo "== test.sh: $1 ($(date -u +%H:%M:%S))" >&2; }

# Tests that need a tool fail, rather than skip, when it is missing: the pixel tests (rsvg-convert,
# Chromium) and the schema test (python3 jsonschema).
export MLAPLAN_REQUIRE_TOOLS=1

# The Python stage needs torch (about 5 GB of wheels from PyPI), scipy and pytest-xdist: install them now into the
# stage's fresh virtual environment, behind the C++ builds (mostly download and unpacking, which the
# compilers leave room for), so the stage only builds and installs the package. scripts/test-python.sh
# waits for this and falls back to a venv of its own.
if [[ -z ${SKIP_PYTHON:-} && -z ${MLAPLAN_PYENV:-} ]]; then
  export MLAPLAN_PYENV=$(mktemp -d /tmp/mlaplan-pyenv.XXXXXX)
  trap 'rm -rf "$MLAPLAN_PYENV"' EXIT
  ( start=$SECONDS
    { python3 -m venv "$MLAPLAN_PYENV/venv" &&
      "$MLAPLAN_PYENV/venv/bin/python" -m pip install -q --disable-pip-version-check --only-binary=:all: \
        'torch>=2.11' 'scipy>=1.10' pytest pytest-xdist; } >"$MLAPLAN_PYENV/log" 2>&1
    rc=$?
    echo "== test.sh: torch, scipy and pytest installed in the background in $((SECONDS - start)) s (exit $rc)" >&2
    echo $rc >"$MLAPLAN_PYENV/rc" ) &
fi

stage "release build and the whole suite"
"$root/scripts/build.sh" ${build_args[@]+"${build_args[@]}"}
cmake --build "$build" -j"$(nproc)"  # the tests, beside the executable build.sh made
(cd "$build" && ctest --output-on-failure -j"$(nproc)")

if [[ -z ${SKIP_SANITIZE:-} ]]; then
  stage "sanitize preset: the CPU suite under AddressSanitizer + UndefinedBehaviorSanitizer"
  cd "$root"  # presets are read from the source folder
  "$root/scripts/install-deps.sh" clang libclang-rt-dev  # the preset's compiler, and libFuzzer's runtime
  cmake --preset sanitize >/dev/null
  cmake --build --preset sanitize -j"$(nproc)"
  ctest --preset sanitize -j"$(nproc)"
fi

if [[ -z ${SKIP_PYTHON:-} ]]; then
  stage "python package: pip install . in a fresh virtual environment, then pytest (CPU)"
  "$root/scripts/test-python.sh"
fi

if [[ -z ${SKIP_FUZZ:-} ]]; then
  stage "fuzz targets, ${FUZZ_SECONDS:-15} s each"
  # The sanitize stage built the targets; without it fuzz.sh builds them itself.
  fuzz_build=()
  [[ -z ${SKIP_SANITIZE:-} ]] && fuzz_build=(--no-build)
  BUILD_DIR="$root/build-sanitize" "$root/scripts/fuzz.sh" --seconds "${FUZZ_SECONDS:-15}" --jobs 2 ${fuzz_build[@]+"${fuzz_build[@]}"}
fi
if [[ -n $with_max ]]; then
  stage "MAX harness: pinned toolchain, host-side tests, build for sm_90"
  "$root/scripts/max-reference/build.sh" --out "$build/max"
fi
stage "done"
