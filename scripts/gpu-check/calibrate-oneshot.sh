# part: `python -m mlaplan.calibrate --model deepseek-v3 --tp 8 -o FILE`, as a user runs it
# Its default budget, built-in batches and held-out check: oneshot.json, oneshot.log, oneshot-heldout.json
# (the file's held-out verdict alone) and oneshot-measurements.json (the runs). The package is built first
# unless the site holds one. LOOP=fused calibrates mlaplan's own loop (--loop fused; oneshot-fused.*), as
# costs/h100/deepseek-v3-tp8-bf16-fa3-fused.json was made; MLAPLAN_COMMIT is recorded in the file.
loop=${LOOP:-engine}
[[ $loop == engine || $loop == fused ]] || { echo "gpu-check: LOOP=$(printf %q "$loop"): give engine or fused" >&2; exit 2; }
oneshot=oneshot$([[ $loop == fused ]] && echo -fused)

calibrate_oneshot() {
  py -m mlaplan.calibrate --model deepseek-v3 --tp 8 --loop "$loop" ${MLAPLAN_COMMIT:+--commit "$MLAPLAN_COMMIT"} \
    --measurements "$log_dir/$oneshot-measurements.json" -o "$log_dir/$oneshot.json"
  local rc=$?
  [[ -e $log_dir/$oneshot.json ]] && python3 -c 'import json, sys; json.dump(json.load(open(sys.argv[1])).get("heldout"), open(sys.argv[2], "w"), indent=2)' \
    "$log_dir/$oneshot.json" "$log_dir/$oneshot-heldout.json"
  return $rc
}

cpu_site --reuse
step "calibrate v3 TP 8, $loop loop" "$oneshot.log" calibrate_oneshot
