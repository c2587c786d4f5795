# part: timings: bench sweeps 1..4M twice, M = 1 and 256, Nsight Compute
# GPU tests and a memcheck sample first.
# Each fits one 10-minute slot; docs/performance.md's figures come from it.

# Two identical sweeps, one after the other: the first's table, then how many rows agree within the
# reported spread (scripts/compare_bench.py; 95% wanted).
bench_sweeps() {
  # Mean 512 tokens: at mean 1024, 4M sequences pass the 32-bit limit of the tables.
  # shellcheck disable=SC2054  # the commas are --kernels' list
  local args=(bench --sizes 1:4194304:x4 --mean-length 512 --kernels fast,graph,empty,copy --format md --no-progress)
  "$exe" "${args[@]}" --json "$log_dir/bench-sweep-1.json" -o "$log_dir/bench-sweep-1.md" || return 1
  "$exe" "${args[@]}" --json "$log_dir/bench-sweep-2.json" -o "$log_dir/bench-sweep-2.md" || return 1
  cat "$log_dir/bench-sweep-1.md"
  python3 "$source_dir/scripts/compare_bench.py" "$log_dir/bench-sweep-1.json" "$log_dir/bench-sweep-2.json"
}

# The other chunk counts of issue 13 (x roofline within 1.5x wanted), one sweep each, up to 1M: at
# 4M and mean 512, M = 1 would need a buffer past 2^31 rows and M = 256 tables of 8.6 GB a set.
bench_other_chunks() {
  local m
  for m in 1 256; do
    echo "== M = $m"
    "$exe" bench --sizes 1:1048576:x4 --mean-length 512 --max-chunks "$m" --input-sets 2 --kernels fast,empty,copy \
      --format md --no-progress --json "$log_dir/bench-m$m.json" || return 1
  done
}

# Nsight Compute on the fast kernel's first launch at two sizes: throughput, memory, stall reasons.
ncu_fast() {
  local b
  for b in 16384 1048576; do
    echo "== fast kernel, B = $b"
    ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
      --section Occupancy --section LaunchStats -k regex:fast -c 2 \
      "$exe" bench --sizes "$b" --kernels fast --mode hot --max-time 0.001 --min-samples 3 --input-sets 1 --no-progress || return 1
  done
}

step "GPU tests (ctest -L gpu)" ctest.log ctest --test-dir "$build_dir" -L gpu --output-on-failure
step "memcheck, both kernels" memcheck.log compute-sanitizer --tool memcheck --error-exitcode 1 \
  "$gpu_tests" --gtest_filter="$sanitizer_filter"
step "bench sweeps 1..4M, twice" bench-sweeps.log bench_sweeps
grep -E '^\||rows agree|^differ' "$log_dir/bench-sweeps.log" || true
step "bench at M = 1 and M = 256" bench-other-chunks.log bench_other_chunks
grep -E '^== M|\| fast +\| hot' "$log_dir/bench-other-chunks.log" || true
step "Nsight Compute, fast kernel" ncu.log ncu_fast
