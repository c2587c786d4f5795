# part: the Python package and the prefill executor (FlashAttention-2, -3, cuDNN)
# The executor (python/mlaplan/prefill): every engine against one-shot attention on 200 random batches
# with a planted off-by-one caught, and the bundled batches timed at five buffer sizes (prefill-*.json),
# with FlashAttention-2 (V padded) and FlashAttention-3 (V as it is, what vLLM and SGLang run on SM90;
# prefill-fa3-*.json); then cuDNN SDPA checked on 40 batches and timed on the coding-agent batch.
# FlashAttention-3 is taken where a build imports, else from a wheel in $FA3_WHEELS; else its steps are
# skipped, saying why. Needs no build folder.

# Every engine's prefill against one-shot attention on 200 random batches (B up to 64, contexts up to
# 256K, page sizes 1 to 256), and a planted off-by-one in the tables caught; ATTN: flash or fa3.
prefill_check() { py -m mlaplan.prefill.check --batches 200 --seed 1 --attention "$1"; }

# cuDNN SDPA (--attention cudnn) against one-shot attention on 40 random batches of another seed.
prefill_check_cudnn() { py -m mlaplan.prefill.check --batches 40 --seed 2 --attention cudnn; }

# The coding-agent batch on cuDNN (V unpadded) beside FlashAttention-2's.
prefill_cudnn() {
  py -m mlaplan.prefill "$source_dir/docs/data/prefill-batches/coding-agent.json" --model deepseek-v3 --tp 8 --policy all \
    --attention cudnn --buffer-tokens 8192,65536,262144 --json "$log_dir/prefill-coding-agent-cudnn.json"
}

# The bundled batches (docs/data/prefill-batches), DeepSeek-V3 at TP 8, every policy at five buffer
# sizes, with the kernel $1 (flash: prefill-NAME.json; fa3: prefill-fa3-NAME.json).
prefill_bundled() {
  local f name tag state
  tag=
  [[ $1 == fa3 ]] && tag=fa3-
  for f in "$source_dir"/docs/data/prefill-batches/*.json; do
    name=$(basename "$f" .json)
    py -m mlaplan.prefill "$f" --model deepseek-v3 --tp 8 \
      --policy all --attention "$1" --buffer-tokens 8192,16384,65536,131072,262144 --json "$log_dir/prefill-$tag$name.json" || return 1
  done
  # What the float32 running state costs (docs/prefill.md, "Many merges"): one batch, bf16 state
  # beside fp32, at a small buffer (many merges) and a large one.
  for state in bf16 fp32; do
    py -m mlaplan.prefill "$source_dir/docs/data/prefill-batches/coding-agent.json" \
      --model deepseek-v3 --tp 8 --policy all --attention "$1" --buffer-tokens 8192,65536 --state $state \
      --json "$log_dir/prefill-${tag}state-$state.json" || return 1
  done
}

((${python_gpu_done:-0})) || step "python package on torch and CuPy" python.log python_gpu
step "prefill, 200 random batches" prefill-check.log prefill_check flash
step "prefill, bundled batches timed" prefill-bundled.log prefill_bundled flash
grep -E '^(coding|mooncake|short)|fastest|best at' "$log_dir/prefill-bundled.log" || true
if ! fa3_install >"$log_dir/fa3.log" 2>&1; then
  skip "prefill FA3 steps" "($(tail -n 1 "$log_dir/fa3.log"))"
else
  step "prefill FA3, 200 random batches" prefill-check-fa3.log prefill_check fa3
  step "prefill FA3, bundled batches timed" prefill-bundled-fa3.log prefill_bundled fa3
  grep -E '^(coding|mooncake|short)|fastest|best at' "$log_dir/prefill-bundled-fa3.log" || true
fi
step "prefill, cuDNN, 40 random batches" prefill-check-cudnn.log prefill_check_cudnn
step "prefill, cuDNN, coding-agent timed" prefill-cudnn.log prefill_cudnn
