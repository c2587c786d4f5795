#!/usr/bin/env bash
# Installs the build in BUILD_DIR to a fresh prefix, then builds tests/consumer (an engine's project:
# find_package(mlaplan), links mlaplan::core only) against it and runs it. Also checks that core's
# headers include nothing of another layer and nothing of fmt, nlohmann/json or CLI11.
# Usage: tests/install_consumer_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
source_dir=$1
build_dir=$2
work=$(mktemp -d /tmp/mlaplan-consumer.XXXXXX)
trap 'rm -rf "$work"' EXIT

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
for f in lib/cmake/mlaplan/mlaplanConfig.cmake lib/cmake/mlaplan/mlaplanConfigVersion.cmake lib/libmlaplan_core.a \
         include/mlaplan/batch.hpp include/mlaplan/reference_planner.hpp bin/mlaplan; do
  [[ -e $work/prefix/$f ]] || { echo "not installed: $f"; exit 1; }
done

# core's headers on their own: each compiles with only core's include folder (and CUDA's), and what
# it pulls in names no other library.
cuda_inc=()
[[ -d /usr/local/cuda/include ]] && cuda_inc=(-I/usr/local/cuda/include)
for h in "$source_dir"/lib/core/include/mlaplan/*.hpp; do
  name=$(basename "$h")
  if [[ $name == device_plan.hpp && ${#cuda_inc[@]} -eq 0 ]]; then continue; fi
  deps=$(echo "#include \"mlaplan/$name\"" | c++ -std=c++17 -x c++ -E -I"$source_dir/lib/core/include" "${cuda_inc[@]}" - |
         grep -o '^# [0-9]* "[^"]*"' | grep -o '"[^"]*"' | sort -u)
  if grep -E '/(fmt|nlohmann|CLI)/' <<<"$deps"; then echo "core header $name includes the above"; exit 1; fi
done
echo "core headers: self-contained, no fmt, nlohmann/json or CLI11"

cmake -S "$source_dir/tests/consumer" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/consumer" | tee "$work/out.txt"
grep -q "^buffer_lengths: 512 384 -1 -1$" "$work/out.txt"
# A GPU where there is one: the device API through the installed package gives the same row.
if grep -q "^gpu buffer_lengths" "$work/out.txt"; then grep -q "^gpu buffer_lengths: 512 384 -1 -1$" "$work/out.txt"; fi
echo "consumer: built against the installed package and planned"
