# part: mlaplan's fused loop beside the engines' loops, each part against its roofline (issue 64)
# The executor's parts against this GPU's peak (tests/python/test_roofline.py on the GPU: the peak in a
# datacenter GPU's range, no part faster than its limit), then the bundled coding-agent batch
# (DeepSeek-V3 TP 8, FlashAttention-3) under vLLM's, SGLang's and TensorRT-LLM's loops, guided with the
# GPU's cost file where there is one, and mlaplan's own loop (+fused) at 16K-64K rows, checked against
# one-shot attention: the parts table and the roofline table in loops.log, the runs in loops.json; then
# the check's 200 random batches, every variant in both loops, the planted defect caught; then FP8
# kv_b_proj in both loops (loops-fp8.json) and 40 batches checked so. Reads
# MLAPLAN_GUIDE (a cost file for guided; default: the shipped file of this GPU, if any); guided+fused
# chooses by the GPU's fused-loop file where one ships (on this batch at 16K-64K rows on the H100 both
# files choose the same plans).

loops_roofline() { (cd /tmp && PYTHONPATH=$site python3 -m pytest -q -rs -s "$source_dir/tests/python/test_roofline.py"); }

loops_coding_agent() {
  local gpu dir guide fused policies
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
  case $gpu in *H100*) dir=$source_dir/costs/h100 ;; *H200*) dir=$source_dir/costs/h200 ;; esac
  guide=${MLAPLAN_GUIDE:-${dir:+$dir/deepseek-v3-tp8-bf16-fa3.json}}
  fused=${dir:+$dir/deepseek-v3-tp8-bf16-fa3-fused.json}
  [[ -n $fused && -f $fused && -z ${MLAPLAN_GUIDE:-} ]] || fused=$guide
  policies=packed,even-split/sglang,packed/trtllm,packed+fused,max+fused,packed/trtllm+fused
  [[ -n $guide && -f $guide ]] && policies+=",guided:$guide,guided:$fused+fused"
  py -m mlaplan.prefill "$source_dir/docs/data/prefill-batches/coding-agent.json" --model deepseek-v3 --tp 8 \
    --attention fa3 --policy "$policies" --buffer-tokens 16384,32768,65536 --json "$log_dir/loops.json"
}

loops_check() { py -m mlaplan.prefill.check --batches 200 --seed 1 --attention fa3; }

# The same with kv_b_proj as DeepSeek-V3's FP8 checkpoint holds it: vLLM's loop and mlaplan's at 64K rows,
# and 40 random batches against one-shot attention with K and V made alike.
loops_fp8() {
  py -m mlaplan.prefill "$source_dir/docs/data/prefill-batches/coding-agent.json" --model deepseek-v3 --tp 8 \
    --attention fa3 --weights fp8 --policy packed,packed+fused,packed/trtllm+fused --buffer-tokens 65536 \
    --json "$log_dir/loops-fp8.json" || return 1
  py -m mlaplan.prefill.check --batches 40 --seed 2 --attention fa3 --weights fp8
}

cpu_site --reuse
[[ -f $site/mlaplan/prefill/roofline.py ]] || step "python package (no CUDA planner)" python-build.log python_cpu_build
step "parts against this GPU's peak" loops-roofline.log loops_roofline
step "coding-agent, engines' loops and mlaplan's" loops.log loops_coding_agent
step "fused loop, 200 random batches" loops-check.log loops_check
step "FP8 kv_b_proj, both loops" loops-fp8.log loops_fp8
grep -E '^ *(16,384|32,768|65,536) |peak:|fastest|best at' "$log_dir/loops.log" || true
