# part: `python -m mlaplan.calibrate --model deepseek-v3 --tp 8 -o FILE`, as a user runs it
# Its default budget, built-in batches and held-out check: oneshot.json, oneshot.log and
# oneshot-heldout.json (the file's held-out verdict alone). The package is built first unless the site holds one.

calibrate_oneshot() {
  py -m mlaplan.calibrate --model deepseek-v3 --tp 8 -o "$log_dir/oneshot.json"
  local rc=$?
  [[ -e $log_dir/oneshot.json ]] && python3 -c 'import json, sys; json.dump(json.load(open(sys.argv[1])).get("heldout"), open(sys.argv[2], "w"), indent=2)' \
    "$log_dir/oneshot.json" "$log_dir/oneshot-heldout.json"
  return $rc
}

cpu_site --reuse
step "one command: calibrate deepseek-v3 TP 8" oneshot.log calibrate_oneshot
