# part: the shipped TP 8 files on seed 71's held-out batches: graph and eager reports
# Batches drawn after the FA3 files' graph refit (docs/data/cost-validation/seed-71; HELDOUT_SEED=N picks
# seed N's), every policy at five buffers, within one 10-minute slot, with the kernel $ATTENTION:
# heldout-*.md, heldout-measured-*.json. REPS, ROUNDS, BATCHES, REHEAT_MS, SETTLE_MS and CPU_WAIT_S: _cost.sh.
. "$parts_dir/_cost.sh"
heldout_seed=${HELDOUT_SEED:-71} batches=${BATCHES:-}
cpu_site
step "held out: deepseek-v3 TP 8" heldout-v3-tp8.log validate_heldout deepseek-v3 8 215 "" 250 mooncake-replay short-chat coding-agent
step "held out: kimi-k2 TP 8" heldout-kimi-tp8.log validate_heldout kimi-k2 8 215 "" 250 mooncake-replay short-chat coding-agent
