#!/usr/bin/env bash
# Builds the MAX harness (max_planner.mojo) on any x86-64 Linux machine, no GPU needed:
#   1. installs the pinned Mojo toolchain and MAX kernel library from PyPI into a venv;
#   2. runs the harness's host-side tests (test_protocol.mojo) on the CPU;
#   3. compiles max_planner for the GPU (sm_90, the H100/H200, by default);
#   4. puts it in OUT with the Modular runtime libraries it loads and a `max-planner` wrapper.
# Then, on a machine with the GPU:
#   mlaplan verify --external OUT/max-planner --only-page-sizes ... --only-max-chunks ... --fuzz 100000
#   mlaplan bench --max OUT/max-planner
set -euo pipefail

MOJO_VERSION=1.2.0
MAX_VERSION=26.7.0
here=$(cd "$(dirname "$0")" && pwd)
out=build-max
venv=${MLAPLAN_MAX_VENV:-$HOME/.cache/mlaplan/max-venv-$MAX_VERSION}
target=sm_90
pack=0
test_only=0

usage() {
  cat <<USAGE
usage: scripts/max-reference/build.sh [--out DIR] [--venv DIR] [--target-accelerator ARCH] [--pack] [--test-only]
  --out DIR                 where the harness goes (default build-max)
  --venv DIR                the toolchain's venv (default \$MLAPLAN_MAX_VENV or $venv)
  --target-accelerator ARCH the GPU to compile for (default sm_90)
  --pack                    the runtime libraries as one lib.tar.xz (11 MB instead of 44), unpacked by
                            the wrapper on first use: for carrying to a GPU machine
  --test-only               install the toolchain and run the host-side tests; build nothing
Pins mojo==$MOJO_VERSION, max-mojo-libs==$MAX_VERSION and max-core==$MAX_VERSION.
USAGE
}

while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --venv) venv=$2; shift 2 ;;
    --target-accelerator) target=$2; shift 2 ;;
    --pack) pack=1; shift ;;
    --test-only) test_only=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "build.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

if [ ! -x "$venv/bin/mojo" ] || ! "$venv/bin/pip" show max-mojo-libs 2>/dev/null | grep -x "Version: $MAX_VERSION" >/dev/null; then  # not -q: pipefail would see pip's SIGPIPE
  echo "build.sh: installing mojo==$MOJO_VERSION and max-mojo-libs==$MAX_VERSION into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "mojo==$MOJO_VERSION"
  # --no-deps: the kernel library and its runtime, without MAX's Python serving stack.
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps "max-mojo-libs==$MAX_VERSION" "max-core==$MAX_VERSION"
fi
mojo=$venv/bin/mojo
lib=$(echo "$venv"/lib/python3*/site-packages/modular/lib)
[ -f "$lib/libNVPTX.so" ] || { echo "build.sh: no modular/lib/libNVPTX.so in $venv" >&2; exit 1; }

echo "build.sh: host-side tests"
"$mojo" run -I "$here" "$here/test_protocol.mojo"
[ "$test_only" = 1 ] && exit 0

mkdir -p "$out"
echo "build.sh: compiling max_planner for $target (about a minute)"
"$mojo" build --target-accelerator "$target" -I "$here" "$here/max_planner.mojo" -o "$out/max_planner"

runtime=(libKGENCompilerRTShared.so libAsyncRTMojoBindings.so libAsyncRTRuntimeGlobals.so libMSupportGlobals.so
         libmax_profiler_shim.so libNVPTX.so)
rm -rf "$out/lib" "$out/lib.tar.xz"
if [ "$pack" = 1 ]; then
  tar -C "$lib" -cJf "$out/lib.tar.xz" "${runtime[@]}"
else
  mkdir -p "$out/lib"
  for f in "${runtime[@]}"; do cp "$lib/$f" "$out/lib/"; done
fi

cat > "$out/max-planner" <<'WRAPPER'
#!/bin/sh
# MAX's mla_prefill_plan behind mlaplan's external-planner protocol (scripts/max-reference).
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -d "$here/lib" ] && [ -f "$here/lib.tar.xz" ]; then
  mkdir -p "$here/lib.$$" && tar -C "$here/lib.$$" -xJf "$here/lib.tar.xz" && mv "$here/lib.$$" "$here/lib" 2>/dev/null
  rm -rf "$here/lib.$$"
fi
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The library that turns the embedded PTX into machine code when the kernel is loaded.
export MODULAR_NVPTX_LIBRARY_PATH="$here/lib/libNVPTX.so"
exec "$here/max_planner" "$@"
WRAPPER
chmod +x "$out/max-planner"
echo "build.sh: $out/max-planner ($(du -sh "$out" | cut -f1))"
