# part: one CUDA graph for any batch of a bucket (issue 64 item 5): its GPU test, then timed on coding-agent
# tests/python/test_any_batch.py on the GPU (one capture of mlaplan.prefill.any_batch's step replayed for 24
# random batches, each against one-shot attention and bit for bit against the eager step), then
# `python -m mlaplan.prefill.any_batch` on the bundled coding-agent batch (DeepSeek-V3 TP 8, $ATTENTION,
# FlashAttention-3 where it imports) at 16K, 32K and 64K rows: the one graph's replay and its eager step, a
# replay for a one-chunk batch of the same bucket, and the executor's per-batch graphs and eager runs of
# max+fused and packed+fused (the table in any-batch.log). The loop plans on the device, so the site needs
# the CUDA planner: built here (without running the whole suite) unless the site has it.

any_batch_build() {
  rm -rf "$site" /tmp/mlaplan-gpu-python-build
  CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) python3 -m pip install -q --no-build-isolation --no-deps --target "$site" \
    --config-settings=cmake.define.MLAPLAN_ENABLE_CUDA=ON --config-settings=build-dir=/tmp/mlaplan-gpu-python-build \
    "$source_dir"
}
any_batch_test() { gpu_pytest 600 test_any_batch.py; }
any_batch_time() {
  py -m mlaplan.prefill.any_batch "$source_dir/docs/data/prefill-batches/coding-agent.json" --model deepseek-v3 --tp 8 \
    --attention "$attention" --buffer-tokens 16384,32768,65536
}

py -c 'import mlaplan, sys; sys.exit(not mlaplan.cuda_available())' 2>/dev/null ||
  step "python package (CUDA planner)" python-build.log any_batch_build
fa3_install >/dev/null 2>&1 || echo "FlashAttention-3 not installed: FlashAttention-2 runs"
step "any-batch graph, GPU test" any-batch-test.log any_batch_test
step "any-batch graph, timing" any-batch.log any_batch_time
cat "$log_dir/any-batch.log"
