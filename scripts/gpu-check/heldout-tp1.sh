# part: the shipped DeepSeek-V3 TP 1 file on seed 71's held-out batches
# As heldout (HELDOUT_SEED and the variables _cost.sh lists), within one 10-minute slot.
. "$parts_dir/_cost.sh"
heldout_seed=${HELDOUT_SEED:-71} batches=${BATCHES:-}
cpu_site
step "held out: deepseek-v3 TP 1" heldout-v3-tp1.log validate_heldout deepseek-v3 1 180 "" 250 short-chat coding-agent-tp1
# Its first Mooncake batch holds the card at the power cap, where a 250 ms settle left whichever
# timing came second 7% slow; 3 s reaches the sustained clock (docs/cost-model.md). Two batches.
step "held out: deepseek-v3 TP 1, Mooncake" heldout-v3-tp1-mooncake.log validate_heldout deepseek-v3 1 300 -mooncake 3000 mooncake-replay
