// A sweep: one set of batches evaluated under a grid of buffer sizes, chunk counts and policies,
// with the buffer's memory for a grid of models and TP degrees. Evaluating is kept apart from
// printing (sweep_format.hpp) and from choosing (recommend.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mlaplan/batch.hpp"
#include "mlaplan/explore/model.hpp"
#include "mlaplan/explore/policy.hpp"
#include "mlaplan/profile/planner.hpp"

namespace mlaplan::explore {

struct SweepGrid {
  std::vector<uint32_t> buffer_tokens;  // N values
  std::vector<uint32_t> max_chunks;     // M values (they matter to max only)
  std::vector<Policy> policies;
  std::vector<ModelDims> models;        // empty: no memory figures
  std::vector<uint32_t> tps{1};
  Dtype dtype = Dtype::bf16;
};

// One (policy, N, M) setting over every batch, and its memory under one (model, TP).
struct SweepRow {
  Policy policy;
  uint32_t buffer_tokens = 0;
  std::optional<uint32_t> max_chunks;  // set for max only
  uint64_t batches = 0;
  // Iterations through the buffer per batch, over every batch (a batch max refuses counts the
  // chunks it needs; one another policy refuses counts none).
  double mean_iterations = 0;
  uint32_t p50 = 0, p90 = 0, p99 = 0, max_iterations = 0;
  uint64_t refused = 0;            // batches the policy cannot plan (max: more than max_chunks)
  std::string first_refusal;       // why, for the first refused batch
  double padding_overhead = 0;     // (rows streamed - tokens) / tokens, over all planned batches
  double mean_fill = 0;            // mean over planned batches with chunks of rows / (chunks x N)
  std::vector<uint32_t> iterations;  // per batch, in batch order (refused: UINT32_MAX); for recommend
  // Memory, when a model is given.
  std::optional<ModelDims> model;
  std::optional<BufferMemory> memory;

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
};

// Plans max's batches: the fast CPU planner (parallel over settings) or a Planner such as the GPU's.
struct SweepOptions {
  std::shared_ptr<profile::Planner> max_planner;  // null: the fast CPU planner
  unsigned threads = 0;                  // 0: hardware concurrency (CPU planner only)
  std::function<void(size_t done, size_t total)> progress;  // optional, called between settings
};

// `batches` must be validated; their N and M are overridden by the grid's.
SweepResult run_sweep(const std::vector<Batch>& batches, const SweepGrid& grid, const SweepOptions& options = {});

}  // namespace mlaplan::explore
