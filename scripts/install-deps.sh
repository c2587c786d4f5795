#!/usr/bin/env bash
# Installs what mlaplan needs to build and test on Debian/Ubuntu. Idempotent, and silent when
# everything is already present. The CUDA toolkit is optional: without it the CPU planner is built.
set -euo pipefail

# Extra packages a caller needs beside these come as arguments (scripts/fuzz.sh: clang, libFuzzer).
# librsvg2-bin, chromium and fonts-dejavu-core render the pictures for the pixel tests
# (tests/render_pixels_test.cpp), which decode the PNGs with libpng-dev.
packages=(cmake g++ make libcli11-dev nlohmann-json3-dev libfmt-dev libgtest-dev python3
          librsvg2-bin chromium fonts-dejavu-core libpng-dev "$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "install-deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >/dev/null
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

(($#)) && exit 0  # a caller's extras only: matplotlib is the test suite's business
# matplotlib draws the benchmark plot (scripts/plot_bench.py); its test is skipped without it.
if ! python3 -c "import matplotlib" 2>/dev/null; then
  echo "install-deps: installing matplotlib (pip)" >&2
  python3 -m pip install -q --disable-pip-version-check matplotlib >/dev/null 2>&1 ||
    echo "install-deps: matplotlib could not be installed; the plot test will be skipped" >&2
fi
# jsonschema validates the JSON Schemas of docs/schemas/ (tests/schema_test.py).
if ! python3 -c "import jsonschema" 2>/dev/null; then
  echo "install-deps: installing jsonschema (pip)" >&2
  python3 -m pip install -q --disable-pip-version-check jsonschema >/dev/null 2>&1 ||
    echo "install-deps: jsonschema could not be installed; the schema test will fail under scripts/test.sh" >&2
fi
exit 0
