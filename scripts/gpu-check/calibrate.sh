# part: DeepSeek-V3 TP 8 calibrated and validated on seed 51's batches; the executor's tests
# Within one 10-minute slot, with the kernel $ATTENTION: cost-*.json and measurements-*.json, then
# validation.md and validation-*.json, then the executor's and the calibration's tests on the GPU.
. "$parts_dir/_cost.sh"
cpu_site
step "calibrate deepseek-v3 TP 8" calibrate-v3-tp8.log calibrate deepseek-v3-tp8 deepseek-v3 8 240 170
step "validate deepseek-v3 TP 8" validate.log validate_cost 160 "$log_dir/cost-deepseek-v3-tp8.json"
step "executor and calibration tests" calibrate-tests.log gpu_pytest 120 test_calibrate.py test_prefill_cuda.py test_prefill_fa3.py
