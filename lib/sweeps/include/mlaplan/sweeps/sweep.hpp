// A sweep: one set of batches evaluated under a grid of buffer sizes, chunk counts and policies,
// with the buffer's memory for a grid of models and TP degrees. Evaluating is kept apart from
// printing (sweep_format.hpp) and from choosing (recommend.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mlaplan/batch.hpp"
#include "mlaplan/cost/cost_model.hpp"
#include "mlaplan/policies/dispatch.hpp"
#include "mlaplan/models/model.hpp"
#include "mlaplan/policies/policy.hpp"
#include "mlaplan/profile/planner.hpp"

namespace mlaplan::sweeps {

struct SweepGrid {
  std::vector<uint32_t> buffer_tokens;  // N values
  std::vector<uint32_t> max_chunks;     // M values (they matter to max only)
  std::vector<policies::Policy> policies;
  std::vector<models::ModelDims> models;        // empty: no memory figures
  std::vector<uint32_t> tps{1};
  models::Dtype dtype = models::Dtype::bf16;
  // Cost models, one per (model, TP) of the grid: each row's time is predicted by the one whose model
  // and TP it has (check_costs says which are missing or extra).
  std::vector<cost::CostModel> costs;
  // --timing eager: times are the two clocks' (cost/eager.hpp, the host's dispatch included), the
  // lower bound too; every cost model needs a host section (check_costs). false: graph timing.
  bool eager = false;
  // Buffers MAX is also priced at one shot (M=1) where the grid lacks that setting: its default runs
  // max_chunks 1 (engines.hpp), whatever M the grid sweeps. Their rows are SweepRow::default_only.
  std::vector<uint32_t> max_one_shot;
};

// The index in grid.costs of the cost model for (model, TP), or none.
std::optional<size_t> cost_for(const SweepGrid& grid, const models::ModelDims& model, uint32_t tp);
// InputError naming the cost file and the field when a cost model is for a model, TP or dtype the
// grid does not sweep, when a (model, TP) of the grid has none, and naming both files when two are
// for one (model, TP) or one is given twice, and under eager timing, naming a file without a host section. `command` names the grid in the messages ("sweep", "run").
void check_costs(const SweepGrid& grid, const std::string& command = "sweep");
// A grid without models sweeps its cost files' own: their models (presets; InputError naming the file
// for a name that is none) and, unless keep_tps, their TPs. Then check_costs.
void take_cost_models(SweepGrid& grid, bool keep_tps, const std::string& command = "sweep");

// A setting's predicted time per layer under one cost model (cost/cost_model.hpp), over its batches,
// each priced on the path its engine dispatches it to on the cost model's GPU (dispatch.hpp): a batch
// the policy's loop refuses is refused only where the engine runs that loop.
struct TimeStats {
  size_t cost = 0;                 // index into SweepGrid::costs (and SweepResult::costs)
  uint32_t layers = 0;             // the model's layers: a step's time is a layer's times this
  double mean_us = 0;              // per layer, over the batches; +inf where any is refused
  // The shares below are over the batches the setting plans.
  double p50_us = 0, p90_us = 0, p99_us = 0, max_us = 0;  // nearest rank, refused batches counted as never done
  double iteration_share = 0;      // per_iteration_us x iterations over the time, summed over planned batches
  // time / the lower bound - 1, summed over the batches priced: per batch, the least the model predicts
  // under the policy with a buffer holding it whole or at any buffer and M of the grid. Never below 0.
  double over_lower_bound = 0;
  std::vector<float> layer_us;     // per batch, in batch order (refused: +inf); for recommend
  // As dispatched: the batches priced on each path (indexed by EnginePath) and those refused (their
  // engine runs the loop, which refuses them); the mean iterations over the batches priced (0 on a
  // path that takes the context whole); the most rows one step gathers and up-projects (the whole
  // context's on such a path); and the rows of K/V the setting holds at once, what its memory is:
  // the buffer, or where no batch used one (TensorRT-LLM below SM100), the largest batch's cached +
  // new rows.
  std::array<uint64_t, policies::kEnginePaths> paths{};
  uint64_t refused = 0;
  double mean_iterations = 0;
  uint64_t most_rows = 0;
  uint64_t memory_rows = 0;
  bool buffer_free = false;        // every batch priced, none through the buffer: the time is the same at any buffer
  // Eager timing (SweepGrid::eager): the host-bound share, the time the device waits for the host over
  // the time, summed over the batches priced (0 under graph timing, where the host is left out).
  bool eager = false;
  double host_bound_share = 0;

  uint64_t on(policies::EnginePath p) const { return paths[static_cast<size_t>(p)]; }
  // "chunked", "one-shot" or "absorbed" where every batch priced took that path, else "mixed"; a
  // setting that prices no batch is "chunked" (its loop refuses them all).
  std::string path() const;
  // The time per layer at quantile q in (0, 1], refused batches counted as never done (+inf).
  double at(double q) const;
  // A step's milliseconds for a layer's microseconds: every output shows steps this one way.
  double step_ms(double layer_us) const { return layer_us * layers / 1e3; }
  // A step's milliseconds at quantile q in (0, 1] (+inf where refused batches put it past every batch).
  double step_ms_at(double q) const { return step_ms(at(q)); }
};

// One (policy, N, M) setting over every batch, and its memory under one (model, TP).
struct SweepRow {
  policies::Policy policy;
  uint32_t buffer_tokens = 0;
  std::optional<uint32_t> max_chunks;  // set for max only
  uint64_t batches = 0;
  // Iterations through the buffer per batch, over every batch (a batch max refuses counts the
  // chunks it needs; one another policy refuses counts none).
  double mean_iterations = 0;
  uint32_t p50 = 0, p90 = 0, p99 = 0, max_iterations = 0;
  // LSE merges of one query row's running output under the policy's loop (policy_cost.hpp,
  // QueryMerges), over every query row of the planned batches: the most and p99 (nearest rank).
  uint64_t merges_max = 0, merges_p99 = 0;
  uint64_t refused = 0;            // batches the policy cannot plan (max: more than max_chunks)
  std::string first_refusal;       // why, for the first refused batch
  double padding_overhead = 0;     // (rows streamed - tokens) / tokens, over all planned batches
  double mean_fill = 0;            // mean over planned batches with chunks of rows / (chunks x N)
  std::vector<uint32_t> iterations;  // per batch, in batch order (refused: UINT32_MAX); for recommend
  // Memory, when a model is given.
  std::optional<models::ModelDims> model;
  std::optional<models::BufferMemory> memory;
  // The predicted time, when the grid has a cost model for the row's model and TP.
  std::optional<TimeStats> time;
  // That cost model prices mlaplan's fused loop (kernels.up_projection "fused"): its memory is the
  // fused loop's (BufferMemory::fused_loop_bytes; recommend.hpp's reserved_bytes and held_bytes).
  bool fused_loop = false;
  // Priced only for an engine's default (SweepGrid::max_one_shot), not a setting of the grid: in no
  // recommendation group, found as a group's default row.
  bool default_only = false;

  double refused_share() const { return batches ? static_cast<double>(refused) / static_cast<double>(batches) : 0; }
  // The iteration count at quantile q in (0, 1] counting refused batches as never meeting any count.
  uint32_t iterations_at(double q) const;
  std::string setting() const;  // "max N=16384 M=16", "packed N=65536"
};

struct SweepResult {
  std::string source;         // what the batches came from
  std::string formation;      // how they were formed
  uint64_t batches = 0;
  double mean_batch_size = 0;
  uint64_t requests = 0;      // sequences over all batches
  std::string max_planner;    // "cpu-fast" or "gpu-fast (NVIDIA H200)"
  double seconds = 0;         // evaluation wall time
  std::vector<SweepRow> rows; // policy-major, then N, then M, then model, then TP
  bool interrupted = false;   // stop_requested() cut it short: `rows` holds the finished settings
  size_t settings = 0;        // (policy, N, M) settings in the grid, finished or not
  std::vector<cost::CostModel> costs;  // the grid's, which rows' times refer to
};

// Where a sweep stands: its batches' lower bounds first (phase "bounds": `done` of `total` batches),
// then the settings (phase "settings": `done` of `total` batches x settings, `settings_done` of
// `settings` finished).
struct SweepProgress {
  const char* phase = "settings";
  uint64_t done = 0, total = 0;
  size_t settings_done = 0, settings = 0;
};

// Plans max's batches: the fast CPU planner (parallel over settings) or a Planner such as the GPU's.
struct SweepOptions {
  std::shared_ptr<profile::Planner> max_planner;  // null: the fast CPU planner
  unsigned threads = 0;                  // 0: hardware concurrency (CPU planner only)
  std::function<void(size_t done, size_t total)> progress;  // optional, called between settings
  // Optional: within settings too, from a sweep's thread, about every `progress_every` seconds while
  // it works (one setting of a million batches under guided takes minutes), and once at the end.
  std::function<void(const SweepProgress&)> work_progress;
  double progress_every = 0.5;
};

// `batches` must be validated; their N and M are overridden by the grid's.
SweepResult run_sweep(const std::vector<Batch>& batches, const SweepGrid& grid, const SweepOptions& options = {});

}  // namespace mlaplan::sweeps
