// The engines by name and their default buffers (engines.hpp; docs/policies.md cites the sources).
#include "mlaplan/policies/engines.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "mlaplan/policies/dispatch.hpp"

namespace mlaplan::policies {

const char* engine_name(Engine e) {
  switch (e) {
    case Engine::vllm: return "vllm";
    case Engine::sglang: return "sglang";
    case Engine::trtllm: return "trtllm";
    case Engine::max: return "max";
  }
  return "?";
}

const char* engine_title(Engine e) {
  switch (e) {
    case Engine::vllm: return "vLLM";
    case Engine::sglang: return "SGLang";
    case Engine::trtllm: return "TensorRT-LLM";
    case Engine::max: return "MAX";
  }
  return "?";
}

Engine engine_of(const Policy& p) {
  if (p.kind == PolicyKind::max) return Engine::max;
  if (p.kind == PolicyKind::packed && p.packed == PackedVariant::trtllm) return Engine::trtllm;
  if (p.kind == PolicyKind::even_split && p.even_split == EvenSplitVariant::sglang) return Engine::sglang;
  return Engine::vllm;
}

bool engine_policy(const std::string& name, const Policy& defaults, Policy* out) {
  std::string n = name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
  Policy p = defaults;
  // The engine fixes its own variant: the variant options (--packed, --split-align, --even-split)
  // change plain algorithm names only.
  p.packed = PackedVariant::vllm;
  p.split_align = 0;  // vLLM splits at pages; TensorRT-LLM has no alignment
  p.even_split = EvenSplitVariant::vllm;
  if (n == "vllm") {
    p.kind = PolicyKind::packed;
  } else if (n == "sglang") {
    p.kind = PolicyKind::even_split;
    p.even_split = EvenSplitVariant::sglang;
  } else if (n == "trtllm") {
    p.kind = PolicyKind::packed;
    p.packed = PackedVariant::trtllm;
  } else {
    return false;  // max is its own algorithm name already
  }
  p.engine = n;
  *out = p;
  return true;
}

std::string engine_behaviour(Engine e, uint32_t sm) {
  switch (e) {
    case Engine::vllm: return "packed";
    case Engine::sglang: return "even split";
    case Engine::trtllm: return sm != 0 && sm < kTrtllmChunkedPrefillMinSm ? "one shot" : "packed/trtllm";
    case Engine::max: return "planner";
  }
  return "?";
}

namespace {
uint64_t sat_mul(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}
}  // namespace

uint64_t vllm_default_workspace(uint64_t max_model_len, uint32_t max_num_seqs, uint32_t block_size) {
  const uint64_t w = std::min<uint64_t>(std::max(sat_mul(8, max_model_len), sat_mul(sat_mul(4, max_num_seqs), block_size)),
                                        64 * 1024);
  const uint64_t page = std::max<uint32_t>(1, block_size);
  return (w + page - 1) / page * page;  // align_mla_chunked_context_workspace_size's round_up
}

EngineDefault engine_default(Engine e, const EngineSettings& s, uint32_t sm) {
  EngineDefault d;
  d.engine = e;
  switch (e) {
    case Engine::vllm:
      d.buffer_tokens = vllm_default_workspace(s.max_model_len, s.max_num_seqs, s.block_size);
      d.formula = fmt::format("min(max(8 x {}, 4 x {} x {}), 65536), rounded up to a page", s.max_model_len,
                              s.max_num_seqs, s.block_size);
      d.knob = "none upstream (no flag or env var); it moves only with max_model_len, max_num_seqs and block_size";
      break;
    case Engine::sglang:
      d.buffer_tokens = kSglangDefaultChunkCapacity;
      d.formula = "SGLANG_MAX_KV_CHUNK_CAPACITY's default (128 x 1024)";
      d.knob = "the environment variable SGLANG_MAX_KV_CHUNK_CAPACITY";
      break;
    case Engine::trtllm:
      d.buffer_tokens = sat_mul(s.max_num_tokens, kTrtllmChunkedPrefillBufferBatchSize);
      d.whole_context = sm != 0 && sm < kTrtllmChunkedPrefillMinSm;
      d.formula = fmt::format("max_num_tokens {} x chunked_prefill_buffer_batch_size {}", s.max_num_tokens,
                              kTrtllmChunkedPrefillBufferBatchSize);
      d.knob = d.whole_context ? fmt::format("none on SM{}: no loop below SM100", sm)
                               : "max_num_tokens and chunked_prefill_buffer_batch_size (two config keys)";
      break;
    case Engine::max:
      d.buffer_tokens = kMaxDefaultBufferSize;
      d.formula = "buffer_size 16384 in its DeepSeek layers, max_chunks 1";
      d.knob = "buffer_size in its DeepSeek layers (flare_mla_prefill_plan's argument; no serving option)";
      break;
  }
  return d;
}

}  // namespace mlaplan::policies
