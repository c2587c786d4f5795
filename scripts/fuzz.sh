#!/usr/bin/env bash
# Coverage-guided fuzzing of mlaplan's input readers and planners with libFuzzer (tests/fuzz).
#
#   scripts/fuzz.sh [--seconds S] [--runs N] [--target NAME] [--jobs J] [--no-build]
#
#   --seconds S   fuzz each target for S seconds (default 20)
#   --runs N      instead, stop each target after N executions
#   --target NAME only this target (repeatable): fuzz_scenario, fuzz_planners, fuzz_plan_tables,
#                 fuzz_lengths_csv, fuzz_model_config, fuzz_cost_file
#   --jobs J      fuzz J targets at a time (default 1), one process each
#   --no-build    use the targets already built in BUILD_DIR
#
# Installs clang and libFuzzer's runtime from Debian's packages when missing, configures BUILD_DIR
# (default build-sanitize, the sanitize preset's folder and settings: clang, CUDA off, the library
# under AddressSanitizer + UndefinedBehaviorSanitizer, -DMLAPLAN_FUZZ=ON), builds the fuzz targets
# there, copies the committed seeds of
# tests/fuzz/corpus/<target> into BUILD_DIR/corpus/<target> (the committed seeds stay clean; the
# working corpus grows there from run to run), runs each target over it and over
# tests/fuzz/regressions/<target> (inputs that once crashed), and prints one summary line per target.
# Exits 1 when any target crashed, leaked, timed out or ran out of memory; the line names the input
# libFuzzer saved (a crash-*, leak-*, timeout-* or oom-* file), which reproduces it:
#   BUILD_DIR/fuzz/<target> <that file>
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-sanitize}
case "$build" in /*) ;; *) build=$PWD/$build ;; esac

all_targets=(fuzz_scenario fuzz_planners fuzz_plan_tables fuzz_lengths_csv fuzz_model_config fuzz_cost_file)
seconds=20
runs=""
jobs=1
do_build=1
targets=()
usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while (($#)); do
  case "$1" in
    --seconds) seconds=${2:?}; shift 2 ;;
    --seconds=*) seconds=${1#*=}; shift ;;
    --runs) runs=${2:?}; shift 2 ;;
    --runs=*) runs=${1#*=}; shift ;;
    --target) targets+=("${2:?}"); shift 2 ;;
    --target=*) targets+=("${1#*=}"); shift ;;
    --jobs) jobs=${2:?}; shift 2 ;;
    --jobs=*) jobs=${1#*=}; shift ;;
    --no-build) do_build=0; shift ;;
    -h|--help) usage ;;
    *) echo "fuzz.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
((${#targets[@]})) || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "fuzz.sh: unknown target '$t'; choose one of ${all_targets[*]}" >&2; exit 2; }
done
[[ "$seconds" =~ ^[0-9]+$ && "$jobs" =~ ^[1-9][0-9]*$ && ( -z "$runs" || "$runs" =~ ^[0-9]+$ ) ]] ||
  { echo "fuzz.sh: --seconds, --runs and --jobs take whole numbers" >&2; exit 2; }

if ((do_build)); then
  # clang with libFuzzer's runtime (libclang_rt.fuzzer, in libclang-rt-14-dev on Debian 12), plus
  # what the library itself needs; install-deps.sh is quiet when everything is present.
  "$root/scripts/install-deps.sh" clang libclang-rt-dev
  cxx=${FUZZ_CXX:-$(command -v clang++ || command -v clang++-14)}
  start=$SECONDS
  echo "fuzz.sh: building the fuzz targets in $build ($("$cxx" --version | head -1))" >&2
  mkdir -p "$build"
  # The sanitize preset's settings (CMakePresets.json), so the default build-sanitize/ serves both the
  # sanitizer suite and the fuzz targets: one build of the library, not two.
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DCMAKE_CXX_COMPILER="$cxx" -DMLAPLAN_ENABLE_CUDA=OFF -DMLAPLAN_SANITIZE=ON -DMLAPLAN_FUZZ=ON \
    >"$build/configure.log" 2>&1 ||
    { cat "$build/configure.log" >&2; exit 1; }
  cmake --build "$build" --target fuzz_targets -j"${FUZZ_BUILD_JOBS:-$(nproc)}" >"$build/build.log" 2>&1 ||
    { tail -50 "$build/build.log" >&2; exit 1; }
  echo "fuzz.sh: built in $((SECONDS - start)) s" >&2
fi

limit=(-max_total_time="$seconds")
[ -n "$runs" ] && limit=(-runs="$runs")
logs=$build/fuzz-logs
mkdir -p "$logs"

# Runs one target; its log goes to $logs/<target>.log.
fuzz_one() {
  local t=$1 bin=$build/fuzz/$1
  if [ ! -x "$bin" ]; then
    echo "fuzz.sh: $bin is missing; build first (drop --no-build)" >"$logs/$t.log"
    echo "1 0" >"$logs/$t.rc"
    return
  fi
  local corpus=$build/corpus/$t artifacts=$build/artifacts/$t/
  mkdir -p "$corpus" "$artifacts"
  cp -n "$root/tests/fuzz/corpus/$t/"* "$corpus/" 2>/dev/null || true
  local extra=()
  case "$t" in fuzz_scenario|fuzz_plan_tables|fuzz_model_config|fuzz_cost_file) extra+=(-dict="$root/tests/fuzz/json.dict") ;; esac
  local began=$SECONDS rc=0
  : >"$logs/$t.log"
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
  # First the inputs that once crashed (tests/fuzz/regressions/<target>), each run once; they stay out
  # of the working corpus, whose inputs libFuzzer keeps within -max_len (4096 bytes by default).
  local regressions=("$root/tests/fuzz/regressions/$t/"*)
  if [ -e "${regressions[0]}" ]; then
    "$bin" -artifact_prefix="$artifacts" "${regressions[@]}" >>"$logs/$t.log" 2>&1 || rc=$?
    if ((rc != 0)); then
      echo "fuzz.sh: a regression input of tests/fuzz/regressions/$t fails again (see above)" >>"$logs/$t.log"
      echo "$rc $((SECONDS - began))" >"$logs/$t.rc"
      return
    fi
  fi
  # -timeout: one input running 20 s is a hang; -rss_limit_mb: the default 2 GiB, said explicitly.
  "$bin" "${limit[@]}" -print_final_stats=1 -timeout=20 -rss_limit_mb=2048 -artifact_prefix="$artifacts" \
    "${extra[@]}" "$corpus" >>"$logs/$t.log" 2>&1 || rc=$?
  echo "$rc $((SECONDS - began))" >"$logs/$t.rc"
}

# One line per target from its log: executions, time, rate, coverage, corpus, and the crash input if any.
summarize() {
  local t=$1 log=$logs/$1.log
  local rc secs execs rate cov ft corp artifact
  read -r rc secs <"$logs/$t.rc" || { rc=1; secs=0; }
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1 || true)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1 || true)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2 || true)
  ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | cut -d' ' -f2 || true)
  corp=$(grep -oE 'corp: [0-9]+/[0-9]+[a-zA-Z]*' "$log" | tail -1 | cut -d' ' -f2 || true)
  artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1 || true)
  if ((rc == 0)) && [ -z "$artifact" ]; then
    printf '%-18s ok     %12s execs  %5ss  %7s exec/s  cov %-6s ft %-7s corpus %s\n' "$t" "${execs:-?}" "${secs:-?}" \
      "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}"
  else
    printf '%-18s FAILED (exit %s) after %s execs: %s\n' "$t" "$rc" "${execs:-?}" "${artifact:-no input saved}"
    { grep -m3 -E '^\*\*\* fuzz invariant|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|fuzz\.sh: ' "$log" ||
      true; } | sed 's/^/    /'
    if grep -q 'regression input' "$log"; then
      echo "    regression input that fails again: $(sed -n 's/^Running: //p' "$log" | tail -1 || true)"
    fi
    echo "    log: $log"
    if [ -n "$artifact" ]; then echo "    reproduce: $build/fuzz/$t $artifact"; fi
  fi
}

start=$SECONDS
rm -f "$logs"/*.rc
running=0
for t in "${targets[@]}"; do
  if ((running >= jobs)); then
    wait -n || true
    running=$((running - 1))
  fi
  fuzz_one "$t" &
  running=$((running + 1))
done
wait
failed=0
total=0
for t in "${targets[@]}"; do
  summarize "$t"
  n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$logs/$t.log" | tail -1 || true)
  total=$((total + ${n:-0}))
  read -r rc _ <"$logs/$t.rc" || rc=1
  if ((rc != 0)) || grep -q 'Test unit written to' "$logs/$t.log"; then failed=1; fi
done
echo "fuzz.sh: ${#targets[@]} targets, $total executions in $((SECONDS - start)) s; logs in $logs"
exit $failed
