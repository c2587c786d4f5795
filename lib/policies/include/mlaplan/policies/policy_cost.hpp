// A cost model's terms (cost/features.hpp) for one layer's prefill of a batch under each policy,
// counted as the executor (python/mlaplan/prefill) runs each engine's chunked loop: which queries
// attend each chunk, how many launches and merges there are, and the new tokens' own step; and of
// the path that takes the whole context at once, where the engine dispatches the batch there on the
// cost file's GPU (dispatch.hpp). docs/cost-model.md gives each engine's pattern with the code it
// follows.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "mlaplan/batch.hpp"
#include "mlaplan/cost/cost_model.hpp"
#include "mlaplan/cost/eager.hpp"
#include "mlaplan/cost/features.hpp"
#include "mlaplan/policies/dispatch.hpp"
#include "mlaplan/policies/policy.hpp"
#include "mlaplan/plan_tables.hpp"

namespace mlaplan::policies {

// A max plan's tables, read only, in the planners' layout: `chunks` rows.
struct MaxTablesView {
  const uint32_t* row_offsets = nullptr;    // chunks x (B + 1)
  const uint32_t* cache_offsets = nullptr;  // chunks x B
  const int32_t* lengths = nullptr;         // chunks
  uint32_t chunks = 0;
};

// A planner's tables, viewed.
inline MaxTablesView max_tables_view(const PlanTables& t) {
  return {t.buffer_row_offsets.data(), t.cache_offsets.data(), t.buffer_lengths.data(), t.max_chunks};
}

// Eager time (cost/eager.hpp): a cost model's coefficients and host costs, and the layer's two clocks,
// which the functions below run over the executor's launches, in its order, where given one (the
// same walk that counts the terms: O(iterations), nothing stored per launch).
struct EagerTime {
  const std::array<double, cost::kTerms>& coefficients;
  const cost::HostCosts& host;
  cost::Clock clock;  // the layer's, set by the call
  // The model must have a host section.
  explicit EagerTime(const cost::CostModel& m) : coefficients(m.coefficients), host(*m.host) {}
  EagerTime(const std::array<double, cost::kTerms>& c, const cost::HostCosts& h) : coefficients(c), host(h) {}
  double coefficient(cost::Term t) const { return coefficients[static_cast<size_t>(t)]; }
};

// The terms of a policy that streams the cached context only (packed, even-split and their
// variants), for a batch it does not refuse (policy_outcome). With `outcome`, also the policy's
// outcome, from the same walk.
// `new_step`: new_tokens_features of the batch, where the caller has it (a sweep works it out once per
// batch: it does not depend on the buffer).
cost::Features policy_features(const Batch& batch, const Policy& policy, const cost::Geometry& g,
                               PolicyOutcome* outcome = nullptr, const cost::Features* new_step = nullptr, EagerTime* eager = nullptr);

// The new tokens' own step, which every policy but max runs whatever the buffer: their rows
// up-projected and one causal launch over each sequence's queries.
cost::Features new_tokens_features(const Batch& batch, const cost::Geometry& g);

// policy_outcome and, where the policy plans the batch, its terms in `f`: one walk of packed's
// chunks for both (a sweep with a cost model would otherwise walk them twice).
PolicyOutcome outcome_with_features(const Batch& batch, const Policy& policy, const cost::Geometry& g, cost::Features& f,
                                    const cost::Features* new_step = nullptr, EagerTime* eager = nullptr);

// Max's terms, from the tables a planner wrote for the batch.
cost::Features max_features(const Batch& batch, const MaxTablesView& tables, const cost::Geometry& g, EagerTime* eager = nullptr);
// The same from the closed form its plan is made by, with no tables (none of the memory that
// max_chunks x batch size cells take): refused past the batch's max_chunks (InfeasibleBatch) or past
// 2^24 chunks (InputError, as the other policies' walks).
cost::Features max_features(const Batch& batch, const cost::Geometry& g, EagerTime* eager = nullptr);

// Each chunk's terms, in chunk order, as policy_features and max_features count them (graph timing):
// `sink(terms, times)` is given `times` alike chunks in a row, each with its iteration, its rows
// gathered, its launches and their merges. The layer's terms less the chunks' are the rest (the batch's
// fixed launches, the new tokens' own step, vLLM's final merge), so a cost model's price of the chunks
// and the rest adds up to the layer's: where a plan's time goes, with no second formula.
using ChunkSink = std::function<void(const cost::Features& chunk, uint64_t times)>;
// policy_features (a policy other than max, on its own loop, for a batch it does not refuse), chunk by chunk.
cost::Features policy_features_by_chunk(const Batch& batch, const Policy& policy, const cost::Geometry& g, const ChunkSink& sink);
// max_features from a planner's tables, chunk by chunk.
cost::Features max_features_by_chunk(const Batch& batch, const MaxTablesView& tables, const cost::Geometry& g, const ChunkSink& sink);

// The terms of the batch under the same policy with a buffer that holds all of it at once (max: one
// chunk and no cap on chunks): the floor that "time over the lower bound" is measured from. vLLM's
// packed policy still ends a chunk at a request without context, as it does at any buffer.
cost::Features unbounded_features(const Batch& batch, const Policy& policy, const cost::Geometry& g,
                                  const cost::Features* new_step = nullptr, EagerTime* eager = nullptr);

// Whether the policy, at the batch's buffer, streams every context in one piece and so plans it as a
// buffer holding all of it would: its terms are then unbounded_features' (max: its planner's one
// chunk; packed: no context split; the even split: one chunk). A sweep reuses the lower bound's
// terms for such settings, most of a grid's larger buffers. False for a batch the policy refuses.
bool streams_whole(const Batch& batch, const Policy& policy);

// The terms of the path that takes the whole context at once (TensorRT-LLM's
// forward_context_with_cached_kv below SM100, SGLang's one-shot MHA, and its absorbed MLA priced as
// the one-shot MHA it replaces), as the executor's _whole_context_step runs it: every sequence's cached
// and new rows gathered and up-projected in one step (no iteration, nothing merged), and one causal
// launch in which each sequence's new tokens attend all its keys (a sequence without new tokens still
// has its place in the grid). O(B). Without context it is the new tokens' step.
cost::Features whole_context_features(const Batch& batch, const cost::Geometry& g, EagerTime* eager = nullptr);

// guided's choice for one batch at its buffer (docs/policies.md): of its candidates (guided_candidates),
// the plan its model prices lowest (by eager time for guided/eager; a tie goes to the first), or,
// where every cached and new token fits the buffer and the model prices that lower, the whole context
// at once (`one_shot`; `plan` is then waves', one chunk). Each candidate is priced once, O(B + chunks).
// Every function that takes guided asks it again per batch; a caller that needs several of them
// (a sweep: the path, the terms, the outcome, the merges) asks once and passes `plan`, which plans,
// prices and merges as guided does for this batch, and reuses `terms`.
struct GuidedChoice {
  Policy plan;
  bool one_shot = false;
  // False where the batch's context needs more chunks than are walked (policy_outcome refuses it):
  // nothing was priced, and `plan` (waves) refuses it too.
  bool priced = false;
  // `plan`'s own loop as the choice priced it, under the guide's model and timing (`eager`: with the
  // host's clocks, in `clock`): its terms and outcome. Not `plan`'s on a one-shot choice.
  cost::Features terms;
  PolicyOutcome outcome;
  cost::Clock clock;
};
GuidedChoice guided_choice(const Batch& batch, const Policy& guided);

// Whether two cost models price alike (the same geometry and coefficients and, with `eager`, host
// costs): a guide read from the --cost file is priced as that file.
bool same_pricing(const cost::CostModel& a, const cost::CostModel& b, bool eager);

// The terms of a policy other than max on the path its engine dispatches the batch to on a GPU of
// compute capability `sm` (engine_path; 0: the policy's own loop, policy_features): the whole
// context's terms, or the loop's for a batch the policy does not refuse. `path`, when given, gets the
// path.
cost::Features dispatched_features(const Batch& batch, const Policy& policy, const cost::Geometry& g, uint32_t sm,
                                   EnginePath* path = nullptr, const cost::Features* new_step = nullptr, EagerTime* eager = nullptr);

// The lower bound under dispatch: the terms with a buffer that holds the batch whole on the path that
// buffer gives (unbounded_path): the whole context's for SGLang and for TensorRT-LLM below SM100,
// unbounded_features' otherwise.
cost::Features dispatched_unbounded_features(const Batch& batch, const Policy& policy, const cost::Geometry& g, uint32_t sm,
                                             const cost::Features* new_step = nullptr, EagerTime* eager = nullptr);

// Merges per query row: how many times each new token's running output is merged by log-sum-exp, as
// the executor's loop merges it (python/mlaplan/prefill/schedule.py, Schedule.merges_per_query): one
// per merged launch that holds the row (a step taken as it is merges nothing; a merge where the row
// has no keys in the chunk still runs), and vLLM's final merge. Summed over the rows it is the cost
// model's merged_query term. Kept as (merges, rows) counts, so batches add up without a row each.
struct QueryMerges {
  // (merges, query rows): all of them, sorted by merges, once compact() has run (before, part of them)
  std::vector<std::pair<uint64_t, uint64_t>> counts;

  void add(uint64_t merges, uint64_t rows);
  void add(const QueryMerges& other);
  void compact();  // every count in `counts`, sorted, one entry per merge count
  uint64_t rows() const;
  uint64_t max() const;
  uint64_t quantile(double q);  // nearest rank over the rows; 0 without rows

 private:
  // A sweep adds every batch's counts to one QueryMerges: past 64K entries they are folded, the
  // common small merge counts into rows by count (one pass, where sorting 64K pairs was a fifth of a
  // sweep without --cost), the rest sorted and merged in `counts`.
  static constexpr uint64_t kDense = 4096;
  std::vector<uint64_t> dense_;  // query rows by merge count, below kDense; kept apart from `counts` until compact()
  bool sorted_ = true;           // `counts` is sorted, one entry per merge count
  void fold();
  void compact_sparse();  // `counts` sorted and merged
};

// The loop of a policy that streams the cached context only, for a batch it does not refuse
// (policy_outcome): even splits and TensorRT-LLM's loop merge every row equally, vLLM's packed loop
// the rows of each chunk's own requests.
QueryMerges policy_query_merges(const Batch& batch, const Policy& policy);
// Max's, from the tables a planner wrote: a query at position p merges once per chunk whose keys it sees.
QueryMerges max_query_merges(const Batch& batch, const MaxTablesView& tables);
// ... or from its plan's closed form, refused as max_features without tables is.
QueryMerges max_query_merges(const Batch& batch);
// The same two, added to `into` (a sweep's, over every batch) without a QueryMerges of their own.
void add_policy_query_merges(QueryMerges& into, const Batch& batch, const Policy& policy);
void add_max_query_merges(QueryMerges& into, const Batch& batch, const MaxTablesView& tables);
// On the path the engine dispatches the batch to on a GPU of compute capability sm (engine_path; 0:
// the loop): none where it takes the whole context at once. Max's from its tables where given, else
// from its closed form.
QueryMerges dispatched_query_merges(const Batch& batch, const Policy& policy, uint32_t sm,
                                    const MaxTablesView* max_tables = nullptr);

}  // namespace mlaplan::policies
