# part: host-bound steps timed at full CPU speed; the shipped host sections refitted
# DeepSeek-V3 and Kimi-K2 at TP 8 (HOST_MODELS narrows it), HOST_SECONDS (200) each: host-runs-*.json,
# refit-*.json. REHEAT_MS=MS reheats that long after each dispatch probe (--reheat-ms); the refit then
# fits the new runs alone, not pooled with the shipped section's.
. "$parts_dir/_cost.sh"

# calibrate_host MODEL TP SECONDS: the host-bound steps (seed-62 short-chat, seed-61 coding-agent, whose
# long loops bound the costs from above, and seed-62 mooncake-conv, taking turns as SECONDS allows, at
# 8K-64K rows, and ten grid points) timed at the host CPU's full speed (--cpu-wait-s), then the shipped
# file's host section refitted on them (scripts/refit_host.py; docs/cost-model.md), and both files' host
# costs set against the runs' launch stamps.
calibrate_host() {
  local c=$source_dir/docs/data/cost-calibration tag=$1-tp$2
  py -m mlaplan.calibrate --model "$1" --tp "$2" --points 10 --attention "$attention" \
    --scenarios "$c/workloads-seed62/short-chat.json" "$c/workloads-seed61/coding-agent.json" "$c/workloads-seed62/mooncake-conv.json" \
    --buffer-tokens 8192,16384,65536 --no-check --max-seconds "$3" --commit "${MLAPLAN_COMMIT:-unknown}" ${REHEAT_MS:+--reheat-ms "$REHEAT_MS"} \
    --measurements "$log_dir/host-runs-$tag.json" -o "$log_dir/host-cost-$tag.json" || return 1
  # A shipped section at the dispatch probe is refitted on its own sessions' runs and these pooled
  # (--keep), so that one session's host weighs by its share of the runs (docs/cost-model.md); runs
  # reheated after each probe (REHEAT_MS) are timed unlike those, and are fitted alone.
  local shipped keep=() f
  shipped=$(shipped_file "$1" "$2")
  [[ ${REHEAT_MS:-0} == 0 ]] &&
    python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1])).get("host", {}).get("probe") != "dispatch")' "$shipped" &&
    keep=(--keep)
  PYTHONPATH=$site python3 "$source_dir/scripts/refit_host.py" "$shipped" "$log_dir/host-runs-$tag.json" \
    "${keep[@]}" ${MLAPLAN_COMMIT:+--commit "$MLAPLAN_COMMIT"} -o "$log_dir/refit-$tag.json" || return 1
  for f in "$shipped" "$log_dir/refit-$tag.json"; do
    launch_stamps "$f" "$log_dir/host-runs-$tag.json" || return 1
  done
}

cpu_site
for m in ${HOST_MODELS:-deepseek-v3 kimi-k2}; do
  step "full-speed host runs: $m TP 8" "host-$m-tp8.log" calibrate_host "$m" 8 "${HOST_SECONDS:-200}"
done
