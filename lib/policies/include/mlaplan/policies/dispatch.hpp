// Which path an engine runs a batch's prefill attention on, on a GPU of a given compute capability:
// its chunk loop, or a path that takes the whole context at once. The one dispatch rule that
// `run --cost`, `sweep --cost`, `--recommend` and mlaplan.cost_features share, as the executor
// (python/mlaplan/prefill/schedule.py, build_schedule with sglang_path="auto", trtllm_path="auto")
// runs it. docs/cost-model.md ("Which path each engine runs") cites each engine's code.
//   TensorRT-LLM  (packed/trtllm) MLA.forward_context: its chunk loop only from SM100 on; below,
//                 forward_context_with_cached_kv, the whole context (cached + new rows) at once.
//   SGLang        (even-split/sglang) _handle_attention_backend: absorbed MLA for a prefix (the sum
//                 of the batch's cache lengths) above 0 and below SGLANG_CHUNKED_PREFIX_CACHE_THRESHOLD;
//                 otherwise one-shot MHA where the batch's cached + new tokens fit the chunk capacity
//                 (the buffer), else the chunk loop. The same on every GPU.
//   vLLM, MAX     their loops, always.
// A batch without context runs the new tokens' step only, whichever path its engine picks: the
// terms of every path are then the same.
#pragma once

#include <cstdint>
#include <string>

#include "mlaplan/batch.hpp"
#include "mlaplan/policies/policy.hpp"

namespace mlaplan::policies {

enum class EnginePath : uint8_t {
  chunked,   // the policy's chunk loop through the buffer (what the planners plan)
  one_shot,  // the whole context at once: TensorRT-LLM below SM100, SGLang's MHA_ONE_SHOT
  absorbed,  // SGLang's absorbed MLA, priced as the one-shot MHA it replaces
};
inline constexpr size_t kEnginePaths = 3;

// "chunked", "one-shot", "absorbed".
const char* path_name(EnginePath path);

// SGLang's SGLANG_CHUNKED_PREFIX_CACHE_THRESHOLD (its default, server_args.py): below this many
// prefix tokens in all (and above 0) the batch runs absorbed MLA.
inline constexpr uint64_t kSglangChunkedPrefixCacheThreshold = 8192;
// TensorRT-LLM runs its chunked-context loop from this compute capability (x10) on: `get_sm_version()
// >= 100` in MLA.forward_context.
inline constexpr uint32_t kTrtllmChunkedPrefillMinSm = 100;

// The path `policy`'s engine runs `batch` on, on a GPU of compute capability `sm` (x10: 90 for 9.0,
// 100 for 10.0). sm 0 names no GPU: every policy runs its own loop (chunked), as without a cost file.
EnginePath engine_path(const Batch& batch, const Policy& policy, uint32_t sm);
// The same from the batch's sums: `prefix` its cached tokens, `total` its cached + new tokens, and
// `buffer` its buffer_token_size (O(1), for sweeps that have the sums).
EnginePath engine_path(const Policy& policy, uint64_t prefix, uint64_t total, uint64_t buffer, uint32_t sm);

// Whether the engine dispatches at all on a GPU of compute capability sm: SGLang and TensorRT-LLM do
// wherever a GPU is named; vLLM and MAX never (their loops, whatever the batch).
bool dispatches(const Policy& policy, uint32_t sm);
// Whether the engine, on sm, takes every batch whole at any buffer with no buffer of its own
// (TensorRT-LLM below SM100): its memory is the whole context's K/V, not a buffer's.
bool whole_without_buffer(const Policy& policy, uint32_t sm);
// The path a buffer holding every batch whole would give: one-shot or absorbed for SGLang, one-shot for
// TensorRT-LLM below SM100, the loop otherwise (what "time over the lower bound" is measured from).
EnginePath unbounded_path(const Batch& batch, const Policy& policy, uint32_t sm);

// Why the batch runs on the path, in one sentence for people: "TensorRT-LLM runs the whole context at
// once on SM90 (forward_context_with_cached_kv; its chunk loop needs SM100)".
std::string path_reason(const Batch& batch, const Policy& policy, uint32_t sm);

// For an engine that takes every batch whole without a buffer on sm (whole_without_buffer): why, in
// one sentence ("TensorRT-LLM runs the whole context at once on SM90 (...)"); "" for the others.
std::string whole_context_reason(const Policy& policy, uint32_t sm);

// "SM90" for 90, "SM100" for 100, "SM89" for 89.
std::string sm_name(uint32_t sm);

}  // namespace mlaplan::policies
