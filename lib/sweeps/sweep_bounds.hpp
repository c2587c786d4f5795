// What a sweep (sweep.cpp) works out per batch before its settings, the same at every buffer, and the
// rows' time over the lower bound after them: the pricing the settings are measured from, under graph
// or eager timing alike. Private to sweeps.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "mlaplan/batch.hpp"
#include "mlaplan/cost/features.hpp"
#include "mlaplan/policies/policy.hpp"
#include "mlaplan/sweeps/sweep.hpp"

namespace mlaplan::sweeps::detail {

// One (policy, N, M) of the grid.
struct Setting {
  policies::Policy policy;
  uint32_t n;
  std::optional<uint32_t> m;
  size_t policy_index = 0;  // in SweepGrid::policies
  bool default_only = false;  // SweepGrid::max_one_shot's: priced for MAX's default only
};

// Per policy and cost model, each batch's predicted time with a buffer holding it whole, on the path
// that buffer gives on the cost model's GPU (dispatched_unbounded_features): the same for every buffer
// size, so worked out once. Where that path takes the context whole it is also the time of every
// setting that dispatches the batch there.
using LowerBounds = std::vector<std::vector<std::vector<double>>>;  // [policy][cost][batch]
// Per cost model, each batch's new tokens' step (new_tokens_features): the same at every buffer size.
using NewSteps = std::vector<std::vector<cost::Features>>;  // [cost][batch]

// What the settings share per batch, worked out once before them.
struct Shared {
  LowerBounds lower;
  LowerBounds lower_wait;  // eager timing: the lower bound's wait for the host (empty under graph timing)
  // [policy][batch]: the iterations of the policy's own loop with a buffer holding the batch whole
  // (the same under every cost model whose lower bound is that loop, loop_floor).
  std::vector<std::vector<uint32_t>> lower_iterations;
  NewSteps new_steps;
  std::vector<uint64_t> prefix, total;  // [batch]: cached tokens, cached + new tokens (for engine_path)
};

// Whether the lower bound of the policy under cost model `sm` is its own loop (not the whole context).
inline bool loop_floor(const policies::Policy& policy, uint32_t sm) { return !policies::dispatches(policy, sm); }

// A setting's rows before they are copied per model and TP: the iteration figures, and the time
// under each of the grid's cost models.
struct Evaluated {
  SweepRow row;
  std::vector<TimeStats> times;
};

// A sweep's progress (SweepOptions::work_progress), counted by its threads as they go and reported
// by whichever passes a count once `every` seconds have gone by since the last report.
class Ticker {
 public:
  Ticker(const SweepOptions& options, size_t settings, size_t batches);
  void bounds(uint64_t batches) { add(bounds_, batches, "bounds"); }  // lower bounds worked out
  void priced(uint64_t batches) { add(priced_, batches, "settings"); }  // batches x settings priced
  void setting_done() { ++settings_done_; }
  void finish();  // the last report, whatever the time

 private:
  void add(std::atomic<uint64_t>& counter, uint64_t n, const char* phase);
  void report(const char* phase);
  const SweepOptions& options_;
  const size_t settings_, batches_;
  std::atomic<uint64_t> bounds_{0}, priced_{0};
  std::atomic<size_t> settings_done_{0};
  std::mutex mutex_;
  std::chrono::steady_clock::time_point last_;
};

// Shared terms of every batch (its lower bounds per policy and cost model, priced eagerly under eager
// timing, and its new tokens' step), over `threads` threads.
Shared shared_terms(const std::vector<Batch>& batches, const SweepGrid& grid, unsigned threads, Ticker* ticker = nullptr);

// Each row's time over the lower bound: per batch, the least the cost model predicts for it under the
// row's policy, with a buffer that holds it whole or at any buffer (and M) of the grid, summed over
// the batches the row prices. A buffer that holds the batch whole is not always the cheapest the
// model knows: its launches fill the GPU's slots in waves (idle_mpair, FlashAttention-2's empty
// blocks, whole query tiles), and chunks of equal blocks can waste less of them than one long causal
// launch (Kimi-K2's max at 16K rows came out 3.5% below one chunk). Floats, as the rows keep their
// times: a row that holds every batch whole is at exactly 0.
void bound_rows(std::vector<Evaluated>& evaluated, const std::vector<Setting>& settings, const LowerBounds& lower,
                size_t policies, size_t batches);

}  // namespace mlaplan::sweeps::detail
