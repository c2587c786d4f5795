// The chunking policies engines use to stream a batch's KV through a fixed buffer, each written
// from its engine's own definition (docs/policies.md names the source of each):
//   max         MAX's mla_prefill_plan (the seed): cache + new tokens per sequence, padded to whole
//               pages, packed in order, capped at max_chunks.
//   packed      vLLM's plan_mla_context_chunks (PR 50613): cached context only, packed in request
//               order, a sequence that does not fit split at an aligned length; a request without
//               context ends the chunk. Variant trtllm: TensorRT-LLM's pre_process_for_chunked_prefill,
//               no alignment and requests without context skipped.
//   even-split  the buffer divided evenly: vLLM before PR 50613 (share = round_down(W / prefills with
//               context, page)) or SGLang (share = W / batch size); chunks = ceil(longest context / share).
//   waves       mlaplan's own (docs/policies.md): full chunks in request order, as packed, but a sequence
//               whose queries leave the GPU's block slots idle streams together with the next ones, each
//               chunk's rows shared in proportion to what each has left, until the launch fills its waves.
//               Variant even: the even split's plan (vLLM's share), run by vLLM's packed loop.
//   guided      mlaplan's own (docs/policies.md): per batch, the cheapest by a cost model of the plans
//               vLLM's packed loop can run (packed, waves at several fill thresholds, waves/even, in the
//               model's launch shape), or the whole context at once where it fits the buffer.
// Every policy reports its plan in the one table form of PlanTables: chunk c holds sequence b in buffer
// rows [row_offset(c, b), row_offset(c, b + 1)), reading its tokens from cache_offset(c, b) on.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mlaplan/batch.hpp"
#include "mlaplan/plan_tables.hpp"

namespace mlaplan::cost {
struct CostModel;
}

namespace mlaplan::policies {

enum class PolicyKind { max, packed, even_split, waves, guided };
enum class WavesShares { fill, even };
enum class PackedVariant { vllm, trtllm };
enum class EvenSplitVariant { vllm, sglang };

struct Policy {
  PolicyKind kind = PolicyKind::max;
  PackedVariant packed = PackedVariant::vllm;
  uint32_t split_align = 0;  // packed (vllm): split points are multiples of this; 0 = the page size
  EvenSplitVariant even_split = EvenSplitVariant::vllm;
  // waves: the attention launch's shape it fills, as FlashAttention's grid has it: (query tile, head)
  // blocks, `waves_slots` of them at once (SMs x blocks per SM). The defaults are DeepSeek-V3 at TP 8
  // (16 heads) on an H100 or H200 (132 SMs), FlashAttention's 128-query tiles.
  uint32_t waves_heads = 16;
  uint32_t waves_slots = 132;
  uint32_t waves_tile = 128;
  // waves: how it shares a chunk's rows: groups that fill the waves (fill), or the even split's
  // shares (even).
  WavesShares waves_shares = WavesShares::fill;
  // waves: how full (in waves of `waves_slots`) a group's blocks must make the launch before the
  // group closes.
  double waves_fill = 0.9;
  // guided: the cost model it chooses by (its file's path, as named: guided:PATH), and whether by
  // eager time (guided/eager:PATH) rather than graph time. No model yet: run and sweep give it
  // their --cost file's (attach_guide).
  std::shared_ptr<const cost::CostModel> guide;
  std::string guide_path;
  bool guide_eager = false;
  // Named by its engine (--policy vllm, sglang, trtllm; engines.hpp): "" for an algorithm name. The
  // name then says the engine and what it does on the GPU of compute capability `engine_sm` (x10; 0:
  // none named): "vllm (packed)", "trtllm (one shot)" on SM90.
  std::string engine;
  uint32_t engine_sm = 0;

  // "max", "packed", "packed/trtllm", "packed/align-1", "even-split/vllm", "even-split/sglang", "waves"
  // ("waves/h128-s132" for another shape than the default, "waves/even"), "guided:PATH" ("guided" with
  // no model yet, "guided/eager:PATH").
  std::string name() const;
  // True when the policy streams cache + new tokens padded to pages (max); false when it streams the
  // cached context only, as the engines' chunked-context loops do.
  bool streams_new_tokens() const { return kind == PolicyKind::max; }
};

// "max", "packed", "even-split" (also "even_split") or "waves", with the variant options applied by the caller.
// Throws InputError naming `option` and the valid names.
PolicyKind parse_policy_kind(const std::string& name, const std::string& option = "--policy");
// A comma list of policies, each an engine (vllm, sglang, trtllm, max; engines.hpp), a kind (its variant taken from `defaults`) or a kind/variant:
// packed/vllm, packed/trtllm, even-split/vllm, even-split/sglang. "all" is max, packed, even-split,
// sglang and trtllm (every engine, and vLLM's even split before PR 50613); "variants" is every engine's
// variant by algorithm name, five policies; "engines" is vllm, sglang, trtllm and max; any of them
// may stand among other items.
// guided:PATH reads the cost file at PATH (its case kept); an empty PATH is refused. Repeats are
// dropped, a guided one before its file is read (one file however spelled: by its identity).
// InputError names `option`.
std::vector<Policy> parse_policies(const std::string& list, const Policy& defaults, const std::string& option = "--policy");

// Drops each policy that plans as one before it: the same name, or guided choosing by the same cost
// file (by identity) and timing. attach_guide ends with it, so `guided,guided/eager` under eager
// timing, or `guided:C,guided` with C the --cost file, are one policy, as callers' rows must be.
void merge_repeats(std::vector<Policy>& policies);

// Sets the GPU (compute capability x10) each engine-named policy is named for: its name then says
// what the engine runs there ("trtllm (one shot)" below SM100). 0: none named.
void name_engines_for(std::vector<Policy>& policies, uint32_t sm);

// Gives each guided policy without a model `model` (run's and sweep's --cost file for the batch's
// model and TP), choosing by eager time where `eager`. A guided policy with no model and none given
// is an InputError naming `option`. Then merges the repeats this makes (merge_repeats).
void attach_guide(std::vector<Policy>& policies, const std::shared_ptr<const cost::CostModel>& model, bool eager,
                  const std::string& option = "--policy", const std::string& give = "--cost FILE");
// The same from the cost files a run or sweep was given: a guided policy without a model takes the
// one file; with several (one per model and TP) it must name its own. `give` says how to give one.
void attach_guide(std::vector<Policy>& policies, const std::vector<cost::CostModel>& costs, bool eager,
                  const std::string& option = "--policy", const std::string& give = "--cost FILE");

// The plans guided chooses from, in its order (a tie goes to the first): packed; waves closing its
// groups at 0.9, then 0, 0.5 and 0.97 of whole waves, at 2 and 4 waves and never (one group); and
// waves/even; waves' shape the model's launch's.
std::vector<Policy> guided_candidates(const Policy& guided);

// What one policy makes of one batch, without the tables: what sweeps aggregate.
struct PolicyOutcome {
  bool refused = false;          // the policy cannot plan the batch (see `why`): max past max_chunks,
                                 // vLLM's even split with a zero share, a buffer below the split alignment
  uint64_t chunks = 0;           // iterations through the buffer (for a refused max batch: the chunks it needs)
  uint64_t payload_tokens = 0;   // tokens the policy must stream: cache + new (max) or cached context
  uint64_t streamed_rows = 0;    // buffer rows written over all chunks, page padding included
  uint64_t largest_chunk = 0;    // rows of the fullest chunk
  std::string why;               // for a refusal: the reason, naming the option to change
};

// A planned batch: the outcome and the tables (max(max_chunks, chunks) chunk rows; for max exactly
// max_chunks). Throws InfeasibleBatch (max) or InputError (the other refusals) naming the fix.
struct PolicyPlan {
  PolicyOutcome outcome;
  PlanTables tables;
};

// The outcome alone, in O(B + chunks) for packed and O(B x chunks) for even-split; max uses the
// closed-form shape (sweeps that want max planned by a Planner use outcome_from_tables).
PolicyOutcome policy_outcome(const Batch& batch, const Policy& policy);
// Plans the tables of a non-max policy; for max, plans with the fast CPU planner. `before_tables`,
// where given, is called with the tables' chunk rows and the fewest the plan needs (its chunks; max:
// the least max_chunks that fits) before they are made, and may throw to refuse them (the Python
// API's memory bound).
PolicyPlan plan_policy(const Batch& batch, const Policy& policy,
                       const std::function<void(uint64_t rows, uint64_t needed)>& before_tables = {});
// A max plan's outcome read back from the tables a Planner produced (GPU or CPU).
PolicyOutcome outcome_from_tables(const Batch& batch, const PlanTables& tables);

// What each sequence streams under `policy`: L[b] (padded cache + new) for max, cache_lengths[b] otherwise.
uint64_t streamed_length(const Batch& batch, const Policy& policy, uint32_t b);

}  // namespace mlaplan::policies
