# part: both TP 8 files' eager costs on seed 141's batches (after their last host refit)
# Two batches a workload (BATCHES); HELDOUT_SEED picks another set (scripts/heldout_batches.py draws
# them); HELDOUT_MODELS, HELDOUT_WORKLOADS and HELDOUT_SECONDS (210) narrow it; the rest as heldout.
. "$parts_dir/_cost.sh"
heldout_seed=${HELDOUT_SEED:-141} batches=${BATCHES:-2}
cpu_site
for m in ${HELDOUT_MODELS:-deepseek-v3 kimi-k2}; do
  # shellcheck disable=SC2086  # the workloads are words
  step "held out (seed $heldout_seed): $m TP 8" "heldout-$m-tp8.log" validate_heldout "$m" 8 "${HELDOUT_SECONDS:-210}" "" 250 \
    ${HELDOUT_WORKLOADS:-short-chat mooncake-replay coding-agent}
done
