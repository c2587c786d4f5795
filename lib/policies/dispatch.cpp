#include "mlaplan/policies/dispatch.hpp"

#include <fmt/format.h>

#include <limits>

#include "mlaplan/policies/policy_cost.hpp"
#include "policy_walk.hpp"

namespace mlaplan::policies {

namespace {

bool is_sglang(const Policy& p) { return p.kind == PolicyKind::even_split && p.even_split == EvenSplitVariant::sglang; }
bool is_trtllm(const Policy& p) { return p.kind == PolicyKind::packed && p.packed == PackedVariant::trtllm; }

struct Sums {
  uint64_t prefix = 0, total = 0;
};

Sums sums_of(const Batch& b) {
  Sums s;
  for (uint32_t len : b.cache_lengths) s.prefix += len;
  s.total = s.prefix + (uint64_t{b.input_row_offsets.back()} - b.input_row_offsets.front());
  return s;
}

const char* engine_title(const Policy& p) {
  switch (p.kind) {
    case PolicyKind::max: return "MAX";
    case PolicyKind::packed: return is_trtllm(p) ? "TensorRT-LLM" : "vLLM";
    case PolicyKind::even_split: return is_sglang(p) ? "SGLang" : "vLLM";
    case PolicyKind::waves: return "mlaplan's waves (vLLM's packed loop)";
    case PolicyKind::guided: return "mlaplan's guided (vLLM's packed loop)";
  }
  return "?";
}

}  // namespace

const char* path_name(EnginePath path) {
  switch (path) {
    case EnginePath::chunked: return "chunked";
    case EnginePath::one_shot: return "one-shot";
    case EnginePath::absorbed: return "absorbed";
  }
  return "?";
}

std::string sm_name(uint32_t sm) { return fmt::format("SM{}", sm); }

bool dispatches(const Policy& policy, uint32_t sm) {
  return policy.kind == PolicyKind::guided || (sm != 0 && (is_sglang(policy) || is_trtllm(policy)));
}

bool whole_without_buffer(const Policy& policy, uint32_t sm) {
  return sm != 0 && is_trtllm(policy) && sm < kTrtllmChunkedPrefillMinSm;
}

EnginePath engine_path(const Policy& policy, uint64_t prefix, uint64_t total, uint64_t buffer, uint32_t sm) {
  // guided's path needs the batch itself (engine_path(batch, ...)); from sums alone, its loop.
  if (!dispatches(policy, sm) || policy.kind == PolicyKind::guided) return EnginePath::chunked;
  if (is_trtllm(policy)) return sm < kTrtllmChunkedPrefillMinSm ? EnginePath::one_shot : EnginePath::chunked;
  // SGLang compares the sum of the prefix lengths with the threshold, and the sum of every sequence's
  // cached + new tokens with the chunk capacity.
  if (prefix > 0 && prefix < kSglangChunkedPrefixCacheThreshold) return EnginePath::absorbed;
  return total <= buffer ? EnginePath::one_shot : EnginePath::chunked;
}

EnginePath engine_path(const Batch& batch, const Policy& policy, uint32_t sm) {
  if (!dispatches(policy, sm)) return EnginePath::chunked;
  if (policy.kind == PolicyKind::guided)  // its own choice, by its cost model, on any GPU
    return guided_choice(batch, policy).one_shot ? EnginePath::one_shot : EnginePath::chunked;
  const Sums s = sums_of(batch);
  return engine_path(policy, s.prefix, s.total, batch.buffer_token_size, sm);
}

EnginePath unbounded_path(const Batch& batch, const Policy& policy, uint32_t sm) {
  if (!dispatches(policy, sm)) return EnginePath::chunked;
  if (policy.kind == PolicyKind::guided) {  // a buffer that holds the whole batch: one shot where the model says so
    Batch wide = batch;
    wide.buffer_token_size = std::numeric_limits<int32_t>::max();
    return engine_path(wide, policy, sm);
  }
  const Sums s = sums_of(batch);
  return engine_path(policy, s.prefix, s.total, UINT64_MAX, sm);
}

std::string whole_context_reason(const Policy& policy, uint32_t sm) {
  if (!whole_without_buffer(policy, sm)) return "";
  return fmt::format("TensorRT-LLM runs the whole context at once on {} (forward_context_with_cached_kv; its chunk loop "
                     "needs SM100)",
                     sm_name(sm));
}

std::string path_reason(const Batch& batch, const Policy& policy, uint32_t sm) {
  // guided's choice is its own on any GPU or none (engine_path), and so is its reason.
  if (policy.kind == PolicyKind::guided)
    return engine_path(batch, policy, sm) == EnginePath::one_shot
               ? "guided runs the whole context at once: every cached and new token fits the buffer, and its cost model "
                 "prices that below every plan's loop"
               : "guided runs vLLM's packed loop over the plan its cost model prices lowest";
  if (sm == 0) return "no GPU named: the policy's own loop";
  const char* engine = engine_title(policy);
  if (!dispatches(policy, sm)) return fmt::format("{} runs its chunk loop on every GPU", engine);
  if (is_trtllm(policy)) {
    if (whole_without_buffer(policy, sm)) return whole_context_reason(policy, sm);
    return fmt::format("TensorRT-LLM runs its chunk loop on {} (SM100 and newer)", sm_name(sm));
  }
  const Sums s = sums_of(batch);
  const uint64_t n = batch.buffer_token_size, threshold = kSglangChunkedPrefixCacheThreshold;
  switch (engine_path(policy, s.prefix, s.total, n, sm)) {
    case EnginePath::absorbed:
      return fmt::format("SGLang runs absorbed MLA: the batch's {} prefix tokens are below "
                         "SGLANG_CHUNKED_PREFIX_CACHE_THRESHOLD ({}); priced as the one-shot MHA it replaces",
                         s.prefix, threshold);
    case EnginePath::one_shot:
      return s.prefix == 0
                 ? fmt::format("SGLang runs one-shot MHA: no prefix, and the batch's {} tokens fit the buffer of {} rows",
                               s.total, n)
                 : fmt::format("SGLang runs one-shot MHA: the batch's {} prefix tokens reach "
                               "SGLANG_CHUNKED_PREFIX_CACHE_THRESHOLD ({}) and its {} cached + new tokens fit the buffer "
                               "of {} rows",
                               s.prefix, threshold, s.total, n);
    case EnginePath::chunked:
      return s.prefix == 0
                 ? fmt::format("SGLang runs its chunked MHA: no prefix, and the batch's {} tokens exceed the buffer of "
                               "{} rows",
                               s.total, n)
                 : fmt::format("SGLang runs its chunk loop: the batch's {} prefix tokens reach "
                               "SGLANG_CHUNKED_PREFIX_CACHE_THRESHOLD ({}) and its {} cached + new tokens exceed the "
                               "buffer of {} rows",
                               s.prefix, threshold, s.total, n);
  }
  return "";
}

}  // namespace mlaplan::policies
