#!/usr/bin/env bash
# Installs the build in BUILD_DIR to a fresh prefix, as an engine would, and checks the public
# surface:
#  - a default install is exactly bin/mlaplan, which runs, core's headers (device_plan.hpp only with
#    CUDA), libmlaplan_core.a and the package config; tests/consumer (find_package(mlaplan), links mlaplan::core only) builds
#    against it and plans;
#  - find_package(mlaplan COMPONENTS tools) fails with a reason while the tools are not installed,
#    and so does a component mlaplan does not have;
#  - the `tools` component adds exactly the other layers' headers and libraries and their targets
#    (mlaplan::cli among them); the consumer's `tools` program builds on them and runs;
#  - every installed header preprocesses with only the installed include folder (and CUDA's), and
#    what it pulls in is none of fmt, nlohmann/json, CLI11 or GoogleTest (build-only dependencies).
# Usage: tests/install_consumer_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
source_dir=$1
build_dir=$2
work=$(mktemp -d /tmp/mlaplan-consumer.XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

# What is installed, one path a line; the per-configuration target file as Targets-CONFIG.cmake.
installed() { (cd "$prefix" && find . -type f -o -type l | sed 's|^\./||; s|Targets-[a-z]*\.cmake$|Targets-CONFIG.cmake|' | LC_ALL=C sort); }
# Compares the installed files with the expected list on stdin.
expect_files() {
  local what=$1
  LC_ALL=C sort >"$work/expected.txt"
  installed >"$work/installed.txt"
  if ! diff -u "$work/expected.txt" "$work/installed.txt"; then echo "$what: the installed files differ from the public set (- missing, + extra)"; exit 1; fi
}
layers=()
# cuda_support has headers too but is no layer: build-only, never installed.
for d in "$source_dir"/lib/*/include/mlaplan/*/; do [[ $(basename "$d") == cuda_support ]] || layers+=("$(basename "$d")"); done

cmake --install "$build_dir" --prefix "$prefix" >/dev/null
have_cuda=OFF
grep -q '^set(mlaplan_HAVE_CUDA ON)' "$prefix/lib/cmake/mlaplan/mlaplanConfig.cmake" && have_cuda=ON
core_set() {
  for h in "$source_dir"/lib/core/include/mlaplan/*; do
    [[ $(basename "$h") == device_plan.hpp && $have_cuda == OFF ]] || echo "include/mlaplan/$(basename "$h")"
  done
  printf '%s\n' bin/mlaplan lib/libmlaplan_core.a lib/cmake/mlaplan/mlaplanConfig.cmake lib/cmake/mlaplan/mlaplanConfigVersion.cmake \
                lib/cmake/mlaplan/mlaplanTargets.cmake lib/cmake/mlaplan/mlaplanTargets-CONFIG.cmake
  # The calibrated cost files, which --gpu finds beside the command.
  (cd "$source_dir" && find costs -name '*.json') | sed 's|^|share/mlaplan/|'
}
core_set | expect_files "default install"
"$prefix/bin/mlaplan" --version >/dev/null
echo "default install: bin/mlaplan (it runs), core's $(ls "$prefix/include/mlaplan" | wc -l) headers, libmlaplan_core.a, the package config and the cost files, nothing else"

# --gpu from another folder takes the installed file (share/mlaplan/costs beside bin/), not the source
# tree's, and names it first.
mkdir "$work/elsewhere"
(cd "$work/elsewhere" && "$prefix/bin/mlaplan" sweep --workload short-chat --batches 20 --gpu h200 --model deepseek-v3 --tp 8 \
   --buffer-tokens 8192 --policy packed) >"$work/gpu.txt"
# (The file is on the second line, under the labels' column.)
head -2 "$work/gpu.txt" | tr -s ' \n' '  ' | grep -qF "gpu NVIDIA H200 (--gpu h200): deepseek-v3 TP 8 priced by $prefix/share/mlaplan/costs/h200/deepseek-v3-tp8-bf16-fa3.json" ||
  { head -3 "$work/gpu.txt"; echo "--gpu h200 did not take the installed cost file"; exit 1; }
echo "installed command: --gpu h200 takes share/mlaplan/costs/h200's file from another folder"

configure() { cmake -S "$source_dir/tests/consumer" -B "$work/$1" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release "${@:2}"; }
configure build >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/consumer" | tee "$work/out.txt"
grep -q "^buffer_lengths: 512 384 -1 -1$" "$work/out.txt"
# A GPU where there is one: the device API through the installed package gives the same row.
if grep -q "^gpu buffer_lengths" "$work/out.txt"; then grep -q "^gpu buffer_lengths: 512 384 -1 -1$" "$work/out.txt"; fi
echo "consumer: built against the installed package and planned"

# Components that are not there: find_package fails and says why.
must_refuse() {
  local components=$1 reason=$2
  if configure "refused-$components" -DCONSUMER_COMPONENTS="$components" >"$work/refused.txt" 2>&1; then
    echo "find_package(mlaplan COMPONENTS $components) succeeded"; exit 1
  fi
  grep -q "$reason" "$work/refused.txt" || { cat "$work/refused.txt"; echo "no reason given for COMPONENTS $components"; exit 1; }
}
must_refuse tools "the tools component is not installed"
must_refuse nonsense "mlaplan has no component 'nonsense'"
echo "find_package: COMPONENTS tools before they are installed, and an unknown component, fail with a reason"

cmake --install "$build_dir" --prefix "$prefix" --component tools >/dev/null
{
  core_set
  for layer in "${layers[@]}"; do
    for h in "$source_dir/lib/$layer/include/mlaplan/$layer"/*; do echo "include/mlaplan/$layer/$(basename "$h")"; done
    echo "lib/libmlaplan_$layer.a"
  done
  printf '%s\n' lib/libmlaplan_fmt.a lib/cmake/mlaplan/mlaplanToolsTargets.cmake lib/cmake/mlaplan/mlaplanToolsTargets-CONFIG.cmake
} | expect_files "install with the tools component"
echo "tools component: adds the layers ${layers[*]} and their targets"

# Every installed header on its own, with only the installed include folder (and CUDA's).
cuda_inc=()
[[ -d /usr/local/cuda/include ]] && cuda_inc=(-I/usr/local/cuda/include)
count=0
while read -r name; do
  deps=$(echo "#include \"$name\"" | c++ -std=c++17 -x c++ -E -I"$prefix/include" "${cuda_inc[@]}" - |
         grep -o '^# [0-9]* "[^"]*"' | grep -o '"[^"]*"' | sort -u) || { echo "$name does not preprocess with only the installed headers"; exit 1; }
  if grep -E '/(fmt|nlohmann|CLI|gtest|gmock)/' <<<"$deps"; then echo "installed header $name includes the above"; exit 1; fi
  count=$((count + 1))
done < <(cd "$prefix/include" && find mlaplan -name '*.hpp' | LC_ALL=C sort)
echo "installed headers: all $count preprocess on their own and include no fmt, nlohmann/json, CLI11 or GoogleTest"

configure build-tools -DCONSUMER_COMPONENTS=tools >/dev/null
cmake --build "$work/build-tools" >/dev/null
"$work/build-tools/tools" | tee "$work/tools.txt"
grep -q "^tools: cpu-reference, properties ok$" "$work/tools.txt"
"$prefix/bin/mlaplan" --version | head -1
echo "tools: built against the installed component and ran"
