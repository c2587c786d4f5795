#!/usr/bin/env bash
# Checks a GPU machine with mlaplan: the GPU runs the docs' measured figures come from. Each part is a
# file in scripts/gpu-check/ (its first line says what it does; `--help` lists them); the parts share
# _common.sh (steps, the Python site, FlashAttention-3 from a wheel) and the cost-model parts _cost.sh.
# Logs and results go to $OUT if set, else ./gpu-check-logs; a summary table is printed last, and the
# exit status is 1 if a step failed. GPU_CHECK_BUNDLE=1 packs them into one gpu-check-logs.tgz there.
set -uo pipefail

source_dir=$(cd "$(dirname "$0")/.." && pwd)
parts_dir=$source_dir/scripts/gpu-check
part_names() { local f; for f in "$parts_dir"/[!_]*.sh; do basename "$f" .sh; done | LC_ALL=C sort; }
is_part() { [[ $1 =~ ^[a-z0-9-]+$ && -f $parts_dir/$1.sh ]]; }

usage() {
  echo "Usage: scripts/gpu-check.sh [BUILD_DIR] [PART...]"
  echo "  BUILD_DIR: default build, built with CUDA (cmake -S . -B build); PART: default all. Parts:"
  local p
  for p in $(part_names); do printf '  %-18s %s\n' "$p" "$(sed -n '1s/^# part: //p' "$parts_dir/$p.sh")"; done
  echo "Environment: OUT (logs), GPU_CHECK_BUNDLE=1, ATTENTION (auto, flash, fa3, cudnn), FA3_WHEELS (.whl/: the"
  echo "  fa3-fwd and nvidia-ml-py wheels for a machine without network),"
  echo "  MAX_PLANNER, MLAPLAN_COMMIT; each part's file names the variables it reads."
}

for a; do
  [[ $a == -h || $a == --help ]] && { usage; exit 0; }
  [[ $a == -* ]] && { echo "gpu-check: unknown option $(printf %q "$a"); see --help" >&2; exit 2; }
done
build_dir=build
[[ $# -gt 0 ]] && ! is_part "$1" && { build_dir=$1; shift; }
parts=("$@")
[[ ${#parts[@]} -gt 0 ]] || parts=(all)
for p in "${parts[@]}"; do
  is_part "$p" || { echo "gpu-check: part $(printf %q "$p") is not one of $(part_names | paste -sd ' '); see --help" >&2; exit 2; }
done

log_dir=${OUT:-./gpu-check-logs}
mkdir -p "$log_dir" && log_dir=$(cd "$log_dir" && pwd)  # absolute: the Python steps run from /tmp
# shellcheck source=scripts/gpu-check/_common.sh
. "$parts_dir/_common.sh"
for p in "${parts[@]}"; do
  if [[ $p =~ ^(all|base|max|perf)$ && ! -x $gpu_tests ]]; then
    echo "gpu-check: $gpu_tests not found; build with CUDA first: cmake -S . -B $build_dir && cmake --build $build_dir" >&2
    exit 2
  fi
done

# run_part NAME: a part's steps (parts made of other parts call it too).
# shellcheck source=/dev/null  # a part named at run time
run_part() { echo "== part $1"; . "$parts_dir/$1.sh"; }

step "nvidia-smi" nvidia-smi.log nvidia-smi
cat "$log_dir/nvidia-smi.log"
have_exe=1
[[ -x $exe ]] || { have_exe=0; echo "gpu-check: $exe not built; skipping the steps that need it"; }
for p in "${parts[@]}"; do run_part "$p"; done

echo
echo "gpu-check summary ($(date -u +%Y-%m-%dT%H:%M:%SZ), logs in $log_dir)"
printf '%-34s %-6s %6s  %s\n' "step" "result" "time" "log"
printf '%s\n' "${summary[@]}"
if [[ ${GPU_CHECK_BUNDLE:-} == 1 ]]; then
  (cd "$log_dir" && tar czf /tmp/gpu-check-logs.tgz --exclude=gpu-check-logs.tgz . && rm -rf ./* && mv /tmp/gpu-check-logs.tgz .)
fi
exit $failed
