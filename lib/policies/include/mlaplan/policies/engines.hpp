// The serving engines by name (--policy vllm, sglang, trtllm, max) and the buffer each picks by
// default from its own settings, with the setting that changes it. docs/policies.md ("Engines by
// name", "Each engine's default buffer") cites each formula's source and version.
//   vLLM          packed (plan_mla_context_chunks), split points page-aligned, in request order; its
//                 workspace min(max(8 x max_model_len, 4 x max_num_seqs x block_size), 64Ki) rows,
//                 rounded up to a page (determine_chunked_prefill_workspace_size and
//                 align_mla_chunked_context_workspace_size, model_executor/layers/attention/mla_attention.py).
//   SGLang        its even split (capacity // batch size), one shot where the batch fits, absorbed MLA
//                 below 8192 prefix tokens; SGLANG_MAX_KV_CHUNK_CAPACITY rows, default 128Ki.
//   TensorRT-LLM  one shot on SM90 (forward_context_with_cached_kv), its packed loop without page
//                 alignment from SM100 on; max_num_tokens x chunked_prefill_buffer_batch_size (4) rows.
//   MAX           its planner (mla_prefill_plan); buffer_size 16384 in its DeepSeek layers, one shot.
#pragma once

#include <cstdint>
#include <string>

#include "mlaplan/policies/policy.hpp"

namespace mlaplan::policies {

enum class Engine : uint8_t { vllm, sglang, trtllm, max };

// "vllm", "sglang", "trtllm", "max" (the --policy names).
const char* engine_name(Engine e);
// "vLLM", "SGLang", "TensorRT-LLM", "MAX" (for sentences).
const char* engine_title(Engine e);

// The engine whose loop runs the policy's plan: max is MAX's; packed/trtllm TensorRT-LLM's;
// even-split/sglang SGLang's; every other (packed, even-split/vllm, waves, guided) vLLM's packed loop.
Engine engine_of(const Policy& policy);

// The policy --policy NAME means for an engine name (vllm, sglang, trtllm, max; any case), its
// `engine` set; false for any other name. `defaults` gives what the engine does not fix.
bool engine_policy(const std::string& name, const Policy& defaults, Policy* out);

// What an engine does on a GPU of compute capability `sm` (x10; 0: no GPU named), for its label:
// "packed", "even split", "one shot" (TensorRT-LLM below SM100), "packed/trtllm", "planner".
std::string engine_behaviour(Engine e, uint32_t sm);

// The settings an engine derives its default buffer from (the user's, or the engines' defaults).
struct EngineSettings {
  uint64_t max_model_len = 0;   // 0: not known (vLLM's formula then takes the model's context)
  uint32_t max_num_seqs = 256;  // vLLM's SchedulerConfig default for the LLM class
  uint32_t block_size = 128;    // the KV cache's page (--page-size)
  uint32_t max_num_tokens = 8192;  // TensorRT-LLM's max_num_tokens (--token-budget)
};

// vLLM: min(max(8 x max_model_len, 4 x max_num_seqs x block_size), 65536), rounded up to a
// multiple of block_size. Saturates instead of wrapping.
uint64_t vllm_default_workspace(uint64_t max_model_len, uint32_t max_num_seqs, uint32_t block_size);
inline constexpr uint64_t kSglangDefaultChunkCapacity = 128 * 1024;  // SGLANG_MAX_KV_CHUNK_CAPACITY
inline constexpr uint32_t kTrtllmChunkedPrefillBufferBatchSize = 4;  // AttentionRuntimeFeatures' default
inline constexpr uint64_t kMaxDefaultBufferSize = 16384;             // MAX's DeepSeek layers' buffer_size

// An engine's default buffer, how it is derived and what changes it.
struct EngineDefault {
  Engine engine = Engine::vllm;
  uint64_t buffer_tokens = 0;
  bool whole_context = false;  // TensorRT-LLM below SM100: no buffer, the whole context at once
  std::string formula;         // "min(max(8 x 163840, 4 x 256 x 128), 65536) = 65536, page-aligned"
  std::string knob;            // the setting that changes it, or that none does
};
EngineDefault engine_default(Engine e, const EngineSettings& settings, uint32_t sm);

}  // namespace mlaplan::policies
