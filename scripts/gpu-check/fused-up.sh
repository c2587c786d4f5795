# part: the fused up-projection (Triton), bf16 and FP8: its GPU tests, then timed against the roofline
# tests/python/test_fused_up.py on the GPU: the kernel (mlaplan.prefill.fused_up) against the unfused
# path (gather, cuBLAS GEMM, split, cat) in bf16, fp16 and fp32, into views and in a CUDA graph; then
# DeepSeek-V3 TP 8 at 64K and 1M rows, the kernel at a few tile settings beside the unfused path, a dense
# bf16 GEMM of the same FLOPs and a copy of the same bytes, timed in the same run (fused-up.json; the
# table in fused-up.log). Then tests/python/test_fused_up_fp8.py: kv_b_proj in e4m3 with 128 x 128 block
# scales, the kernel against its float64 reference and the unfused FP8 path (gather, per-token-group
# quantization, torch._scaled_mm's block-scaled GEMM, split, cat), and timed at 64K and 1M rows beside
# that path, its GEMM alone, the bf16 kernel, a dense e4m3 GEMM and a copy (fused-up-fp8.json and .log).
# Needs no build folder and no FlashAttention.

# The tests with their printed comparisons and timings (-s), the timings also as JSON.
fused_up_gpu() {
  (cd /tmp && PYTHONPATH=$site FUSED_UP_JSON=$log_dir/fused-up.json timeout 600 \
    python3 -m pytest -q -rs -s "$source_dir/tests/python/test_fused_up.py")
}
fused_up_fp8_gpu() {
  (cd /tmp && PYTHONPATH=$site FUSED_UP_FP8_JSON=$log_dir/fused-up-fp8.json timeout 600 \
    python3 -m pytest -q -rs -s "$source_dir/tests/python/test_fused_up_fp8.py")
}

# The site another part built this run serves, if it has the kernel; else the package without the CUDA planner.
[[ -f $site/mlaplan/prefill/fused_up.py ]] || step "python package (no CUDA planner)" python-build.log python_cpu_build
step "fused up-projection, GPU + timing" fused-up.log fused_up_gpu
grep -E 'DeepSeek-V3 TP 8|^  (un)?fused|rows: against' "$log_dir/fused-up.log" || true
step "fused up-projection FP8, GPU+time" fused-up-fp8.log fused_up_fp8_gpu
grep -E 'DeepSeek-V3 TP 8|^  (un)?fused|FP8 .*rows: against|FP8 tile' "$log_dir/fused-up-fp8.log" || true
