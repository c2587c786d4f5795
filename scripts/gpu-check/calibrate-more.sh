# part: the shipped TP 8 file validated; DeepSeek-V3 TP 1 and Kimi-K2 TP 8 calibrated
# Within one 10-minute slot, with the kernel $ATTENTION; cost-*.json and measurements-*.json.
. "$parts_dir/_cost.sh"
cpu_site
step "validate the shipped TP 8 file" validate.log validate_cost 140 "$(shipped_file deepseek-v3 8)"
step "calibrate deepseek-v3 TP 1" calibrate-v3-tp1.log calibrate deepseek-v3-tp1 deepseek-v3 1 200 140
step "calibrate kimi-k2 TP 8" calibrate-kimi-tp8.log calibrate kimi-k2-tp8 kimi-k2 8 200 120
