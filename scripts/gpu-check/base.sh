# part: the C++ side on the GPU: tests, sanitizers, verify, sweep, install, bench; then prefill
# compute-sanitizer's four tools on a sample of both kernels' paths, the scenarios on the GPU backend,
# `verify` with 100,000 random batches on both kernels, `sweep` and every policy's plans on the GPU
# planner against the CPU's (pictures written), a project built against the installed package, the
# Python package on torch and CuPy tensors, and a short `mlaplan bench`; then the prefill part's steps.

# The scenarios on the GPU backend with one kernel: feasible ones must plan and verify (exit 0),
# infeasible-* ones must be refused as bad input (exit 2).
run_scenarios() {
  local kernel=$1 rc=0 want got f
  for f in "$source_dir"/scenarios/*.json; do
    [[ -e $f ]] || continue
    want=0
    [[ $(basename "$f") == infeasible* ]] && want=2
    "$exe" run --backend gpu --kernel "$kernel" "$f" >/dev/null 2>"$log_dir/.stderr" && got=0 || got=$?
    echo "$(basename "$f"): exit $got (want $want) $(head -c 300 "$log_dir/.stderr")"
    [[ $got -eq $want ]] || rc=1
  done
  rm -f "$log_dir/.stderr"
  return $rc
}

# sweep's max rows planned by the GPU planner and by the fast CPU planner: the same figures, and the
# time each took (100,000 batches x 10 buffer sizes; the JSON's "seconds").
sweep_gpu_vs_cpu() {
  local args=(sweep --workload mooncake-synthetic --batches 100000 --buffer-tokens 4096:2097152:x2 --policy max
    --format csv --no-progress)
  "$exe" "${args[@]}" --backend gpu -o "$log_dir/sweep-gpu.csv" --json "$log_dir/sweep-gpu.json" || return 1
  "$exe" "${args[@]}" --backend cpu -o "$log_dir/sweep-cpu.csv" --json "$log_dir/sweep-cpu.json" || return 1
  grep -h '"seconds"\|"max_planner"' "$log_dir/sweep-gpu.json" "$log_dir/sweep-cpu.json"
  cmp "$log_dir/sweep-gpu.csv" "$log_dir/sweep-cpu.csv" && echo "sweep: GPU and CPU figures identical"
}

# Every scenario under every policy with max on the GPU: the plans equal the CPU's (the fields naming
# the planner and timings aside), and the pictures are written.
policies_gpu_vs_cpu() {
  local rc=0 f name
  for f in "$source_dir"/scenarios/*.json; do
    name=$(basename "$f" .json)
    "$exe" run --backend gpu --policy variants --format json "$f" -o "$log_dir/.gpu.json" \
      --svg "$log_dir/.plans.svg" --html "$log_dir/.plans.html" || rc=1
    "$exe" run --backend cpu --policy variants --format json "$f" -o "$log_dir/.cpu.json" || rc=1
    python3 - "$log_dir/.gpu.json" "$log_dir/.cpu.json" "$name" <<'PY' || rc=1
import json, sys
drop = {"backend", "planner", "device", "timings_us", "verification"}
def plans(path):
    doc = json.load(open(path))
    return [{k: v for k, v in s.items() if k not in drop} for s in doc.get("scenarios", [doc])]
gpu, cpu = plans(sys.argv[1]), plans(sys.argv[2])
same = gpu == cpu
print(f"{sys.argv[3]}: {len(gpu)} policies, GPU and CPU plans {'identical' if same else 'DIFFER'}")
sys.exit(0 if same else 1)
PY
  done
  cp "$log_dir/.plans.svg" "$log_dir/plans-last-scenario.svg" 2>/dev/null
  rm -f "$log_dir"/.gpu.json "$log_dir"/.cpu.json "$log_dir"/.plans.svg "$log_dir"/.plans.html
  return $rc
}

step_exe "mlaplan --version" version.log "$exe" --version
step "GPU tests (ctest -L gpu)" ctest.log ctest --test-dir "$build_dir" -L gpu --output-on-failure
for tool in memcheck racecheck initcheck synccheck; do
  step "$tool, both kernels" "$tool.log" compute-sanitizer --tool $tool --error-exitcode 1 \
    "$gpu_tests" --gtest_filter="$sanitizer_filter"
done
for kernel in max-port fast; do
  step_exe "scenarios, --kernel $kernel" "scenarios-$kernel.log" run_scenarios "$kernel"
done
step_exe "verify, GPU fuzz" verify-gpu.log "$exe" verify --backend gpu --kernel all --fuzz 100000 --seed 1 \
  "$source_dir/scenarios" --repro-dir "$log_dir/repro" --junit "$log_dir/verify-junit.xml"
step_exe "sweep, GPU vs CPU planner" sweep.log sweep_gpu_vs_cpu
step_exe "run --policy variants, GPU vs CPU" policies.log policies_gpu_vs_cpu
step "installed package, consumer on the GPU" install.log ctest --test-dir "$build_dir" -R '^Install\.' --output-on-failure
step "python package on torch and CuPy" python.log python_gpu
python_gpu_done=1  # the prefill part below builds it only when run alone
step "explorer CLI tests (GPU sweep)" explore-tests.log "$build_dir/tests/mlaplan_cli_tests" \
  --gtest_filter='ExploreCli.SweepOnTheGpuMatchesTheCpu'
step "benchmark (max-port vs fast)" benchmark.log "$gpu_tests" --gtest_also_run_disabled_tests \
  --gtest_filter='GpuTiming.DISABLED_FastVsMaxPortVsEmptyVsCopy'
grep '^|' "$log_dir/benchmark.log" || true
if ((have_exe)); then
  step "mlaplan bench (short)" bench-short.log "$exe" bench --sizes 1,1024,1048576 --format md \
    --json "$log_dir/bench-short.json"
  grep '^|' "$log_dir/bench-short.log" || true
else skip "mlaplan bench (short)"; fi
run_part prefill
