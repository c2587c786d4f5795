# The cost-model parts' commands (sourced by the calibrate and heldout parts): calibration, validation
# on held-out batches, and the reports of saved measurements.

# The shipped file of $attention's stack for MODEL at TP N: the FA3 file unless FlashAttention-2 runs.
shipped_file() { echo "$source_dir/costs/h200/$1-tp$2-bf16$([[ $attention == flash ]] || echo -fa3).json"; }

# calibrate NAME MODEL TP POINTS SECONDS: a cost file fitted on this GPU (the grid; SECONDS of measuring,
# no held-out check: validate_cost checks it), with its raw measurements.
calibrate() {
  py -m mlaplan.calibrate --model "$2" --tp "$3" --points "$4" --attention "$attention" \
    --workloads none --no-check --max-seconds "$5" --commit "${MLAPLAN_COMMIT:-unknown}" --measurements "$log_dir/measurements-$1.json" \
    -o "$log_dir/cost-$1.json"
}

# validate_cost SECONDS COST: a DeepSeek-V3 TP 8 file predicted, then measured with the executor, on the
# held-out batches of docs/data/cost-validation/seed-51: three workloads, five buffers, every policy.
validate_cost() {
  local d=$source_dir/docs/data/cost-validation/seed-51 rc=0
  py -m mlaplan.calibrate.validate --model deepseek-v3 --tp 8 --attention "$attention" \
    --cost "$2" --scenarios "$d/coding-agent.json" "$d/mooncake-replay.json" \
    "$d/short-chat.json" --reps 3 --warmup 1 --max-seconds "$1" --save "$log_dir/validation-measured.json" \
    --json "$log_dir/validation-report.json" -o "$log_dir/validation.md" || rc=$?
  cat "$log_dir/validation.md"
  return $rc
}

# launch_stamps COST MEASURED: a file's host costs against the runs' launch stamps (docs/cost-model.md).
launch_stamps() { py "$source_dir/scripts/experiments/launch_stamps.py" "$1" "$2"; }

# cost_reports COST MEASURED PREFIX: COST's graph and eager reports of saved measurements,
# PREFIX-{graph,eager}.{md,json}, each's summary printed; the status is the graph report's.
cost_reports() {
  local t rc=0
  for t in graph eager; do
    py -m mlaplan.calibrate.validate --cost "$1" --timing $t --measured "$2" --json "$3-$t.json" -o "$3-$t.md" ||
      { [[ $t == graph ]] && rc=1; }
    [[ -e $3-$t.md ]] && head -n 10 "$3-$t.md"  # the table and the targets line
  done
  return $rc
}

# validate_heldout MODEL TP SECONDS TAG SETTLE_MS WORKLOAD...: the held-out batches of seed
# $heldout_seed for each WORKLOAD (mooncake-replay, short-chat, coding-agent, or coding-agent-tp1 for
# 128-head steps) measured with the executor, every policy at five buffers, each timing after SETTLE_MS
# back to back, then the shipped file's graph and eager reports of the same runs and its host costs
# against their launch stamps (heldout-MODEL-tpTP[TAG]-*). REPS=N times each run N times (default 3;
# more pin down each median). ROUNDS=N measures every setting in N rounds (validate --rounds; eager time
# drifts with the host), and $batches (BATCHES=N) only the first N batches of each workload, so that N
# rounds fit the slot. REHEAT_MS=MS reheats that long after each dispatch probe (--reheat-ms).
# SETTLE_MS=MS and CPU_WAIT_S=S override --settle-ms and --cpu-wait-s (default validate's): on
# short-chat's millisecond steps reheating and settling took 60% of a batch's time, the timed runs 1%.
validate_heldout() {
  local d=$source_dir/docs/data/cost-validation/seed-$heldout_seed tag=$1-tp$2$4 model=$1 tp=$2 seconds=$3 settle=$5 w files=()
  shift 5
  for w; do files+=("$d/$w.json"); done
  py -m mlaplan.calibrate.validate --model "$model" --tp "$tp" --attention "$attention" \
    --scenarios "${files[@]}" --reps "${REPS:-3}" --warmup 1 --settle-ms "${SETTLE_MS:-$settle}" ${CPU_WAIT_S:+--cpu-wait-s "$CPU_WAIT_S"} \
    --rounds "${ROUNDS:-1}" ${batches:+--batches "$batches"} ${REHEAT_MS:+--reheat-ms "$REHEAT_MS"} --max-seconds "$seconds" \
    --save "$log_dir/heldout-measured-$tag.json" || return 1
  local rc=0 shipped
  shipped=$(shipped_file "$model" "$tp")
  cost_reports "$shipped" "$log_dir/heldout-measured-$tag.json" "$log_dir/heldout-$tag" || rc=1
  launch_stamps "$shipped" "$log_dir/heldout-measured-$tag.json" || rc=1
  return "$rc"
}
