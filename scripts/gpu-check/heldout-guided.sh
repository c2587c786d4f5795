# part: mlaplan's guided against the engines on held-out batches: docs/policies.md's rows
# Seed 71's batches (HELDOUT_SEED), GUIDED_SECONDS (180) of measuring; the batch under way when they
# pass still finishes (250 s in all on seed 81). ROUNDS as _cost.sh says.
. "$parts_dir/_cost.sh"
heldout_seed=${HELDOUT_SEED:-71}

# guided_measured SECONDS: mlaplan's guided (by the shipped DeepSeek-V3 TP 8 file) against the engines
# on the held-out seed's coding-agent and Mooncake batches at 8K-64K rows, graph and eager, and the table rows
# of docs/policies.md (scripts/guided_table.py).
guided_measured() {
  local d=$source_dir/docs/data/cost-validation/seed-$heldout_seed f k
  f=$(shipped_file deepseek-v3 8)
  k=$([[ $attention == flash ]] && echo FA2 || echo FA3)
  py -m mlaplan.calibrate.validate --model deepseek-v3 --tp 8 --attention "$attention" \
    --policy "max,packed,even-split,even-split/sglang,guided:$f,guided/eager:$f" --buffer-tokens 8192,16384,32768,65536 \
    --scenarios "$d/mooncake-replay.json" "$d/coding-agent.json" --reps 3 --warmup 1 --rounds "${ROUNDS:-1}" \
    --max-seconds "$1" --save "$log_dir/guided-measured.json" || return 1
  cost_reports "$f" "$log_dir/guided-measured.json" "$log_dir/guided"
  python3 "$source_dir/scripts/guided_table.py" "$k, graph=$log_dir/guided-graph.json" "$k, eager=$log_dir/guided-eager.json"
}

cpu_site
step "held out: guided against the engines" guided.log guided_measured "${GUIDED_SECONDS:-180}"
