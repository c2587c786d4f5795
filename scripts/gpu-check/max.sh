# part: MAX's own kernel ($MAX_PLANNER): fuzz, a planted defect, the differences, bench
# scripts/max-reference/build.sh builds the harness.
# verify --external on 100,000 random batches, a planted defect caught, the differences
# docs/conformance.md lists still there, and `bench` with the max row. Skipped where the harness is not built.
max_planner=${MAX_PLANNER:-$source_dir/build-max/max-planner}
# MAX's kernel is instantiated for these (scripts/max-reference/max_planner.mojo).
# shellcheck disable=SC2054  # the commas are the options' lists
max_only=(--only-page-sizes 1,2,16,64,128,256,1024 --only-max-chunks 1,2,3,4,5,6,8,16,32,64)

# A defect planted in the harness (sequence b given b + 1's cache length) must fail verify, name the
# first differing cell and leave a reproducer that fails with the defect and passes without it.
max_defect_caught() {
  local dir=$log_dir/max-repro rc=0 got=0 repro reprs
  rm -rf "$dir" && mkdir -p "$dir"
  "$exe" verify --external "$max_planner --bug off-by-one" "${max_only[@]}" --fuzz 200 --seed 2 --repro-dir "$dir" \
    --max-reproducers 1 || got=$?
  [[ $got -eq 1 ]] || { echo "verify exited $got with the planted defect; 1 (wrong plans) expected"; return 1; }
  reprs=("$dir"/*.json)
  repro=${reprs[0]}
  [[ -e $repro ]] || { echo "no reproducer written"; return 1; }
  echo "reproducer $(basename "$repro"):"; grep -E '"(page_size|buffer_token_size|max_chunks|cache_lengths|input_row_offsets)"' "$repro"
  "$exe" verify --external "$max_planner --bug off-by-one" "$repro" && { echo "reproducer passes with the defect"; rc=1; }
  "$exe" verify --external "$max_planner" "$repro" || { echo "reproducer fails without the defect"; rc=1; }
  return $rc
}

# The differences docs/conformance.md lists, with MAX exactly as it behaves (--strict): each
# reproducer must still fail, or the page is out of date.
max_differences_still_there() {
  local rc=0 f
  mkdir -p "$log_dir/max-repro"
  for f in "$source_dir"/scripts/max-reference/differences/*.json; do
    echo "== $(basename "$f")"
    if "$exe" verify --external "$max_planner --strict" --repro-dir "$log_dir/max-repro" --max-reproducers 1 "$f"; then
      echo "$(basename "$f"): MAX now agrees: update docs/conformance.md"
      rc=1
    fi
    "$exe" verify --external "$max_planner" "$f" || rc=1  # and the harness's engine-side handling passes
  done
  return $rc
}

if ((have_exe)) && [[ -x $max_planner ]]; then
  step "MAX kernel, verify fuzz 100k" verify-max.log "$exe" verify --external "$max_planner" "${max_only[@]}" \
    --fuzz 100000 --seed 1 --report "$log_dir/verify-max.json"
  step "MAX kernel, planted defect caught" max-defect.log max_defect_caught
  step "MAX kernel, documented differences" max-differences.log max_differences_still_there
  step "mlaplan bench with max" bench-max.log "$exe" bench --max "$max_planner" \
    --sizes 1,128,1024,16384,262144,1048576 --format md --json "$log_dir/bench-max.json"
  grep '^|' "$log_dir/bench-max.log" || true
else
  skip "MAX kernel" "(no $max_planner: scripts/max-reference/build.sh builds it)"
fi
