// Everything `run` shows about one planned scenario, and the three ways to print it.
// Measuring is kept apart from printing: the report holds numbers, the formatters only format.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mlaplan/check/plan_check.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/plan_tables.hpp"
#include "mlaplan/check/scenario.hpp"

namespace mlaplan::io {

// The buffer's memory for a model, when `run --model` gives one (plain figures; lib/models computes them).
struct MemoryFigures {
  std::string model;  // "deepseek-v3"
  uint32_t tp = 1;
  std::string dtype;  // "bf16"
  uint64_t bytes_per_row = 0;  // the up-projected K/V buffer
  uint64_t buffer_bytes = 0;   // bytes_per_row x buffer_token_size
  uint64_t k_concat_bytes = 0; // the K concat buffer vLLM-style paths allocate beside it
  uint64_t latent_bytes = 0;   // the latent workspace the rows are gathered into
  // Priced as mlaplan's fused loop (a cost file's kernels.up_projection "fused"): the buffer is its K and V
  // (BufferMemory::fused_loop_bytes), no latent gathered and no K concat, so both are 0.
  bool fused_loop = false;
};

// The plan's predicted time under a cost model, when `run --cost` gives one (plain figures;
// lib/policies counts the terms and lib/cost prices them).
struct TimeFigures {
  std::string cost_file;     // the --cost file
  std::string holds_for;     // what the file was calibrated on: GPU, kernels, timing, date
  std::string gpu;           // the file's GPU, "NVIDIA H200": named in the time line itself
  std::string model;         // "deepseek-v3"
  uint32_t tp = 1;
  uint32_t layers = 0;       // the model's layers: a step's time is a layer's times this
  uint64_t iterations = 0;   // iterations through the buffer on the path that ran (0 on a one-shot path)
  // The path the engine runs the batch on, on the cost file's GPU: "chunked" (the plan's loop),
  // "one-shot" or "absorbed" (the whole context at once), and why, in a sentence.
  std::string path = "chunked";
  std::string path_reason;
  double layer_us = 0;       // predicted context-phase attention time of one layer
  double iteration_us = 0;   // of which per-iteration overhead (per_iteration_us x iterations)
  double lower_bound_us = 0; // the same batch with a buffer that holds it whole
  // Each chunk's share of layer_us, in the tables' chunk order, where the plan's loop runs under graph
  // timing (policy_cost.hpp's ChunkSink); layer_us less their sum is the rest (the new tokens' step,
  // the batch's fixed launches, vLLM's final merge). Empty on a whole-context path and under eager.
  std::vector<double> chunk_us;
  // --timing eager: the times above are the two clocks' (cost/eager.hpp), and this the share of the
  // step the device waits for the host; none under graph timing.
  std::optional<double> host_bound_share;
  std::string host_holds_for;  // eager: what the file's host section holds for
  // eager: the host speed its costs are stated at, the file's probe_ms of its probe ("cpu" or
  // "dispatch"); 0 where the file records none.
  std::string host_probe;
  double host_probe_ms = 0;
  std::string host_date;  // eager: when the host section's runs were timed ("": not recorded)

  double step_ms(double us) const { return us * layers / 1e3; }  // a layer's us as a step's ms
  double iteration_share() const { return layer_us > 0 ? iteration_us / layer_us : 0.0; }
  double over_lower_bound() const { return lower_bound_us > 0 ? layer_us / lower_bound_us - 1 : 0.0; }
};

struct PlanReport {
  const check::Scenario* scenario = nullptr;
  // The chunking policy (lib/policies/policy.hpp): "max" is the seed's plan of cache + new tokens;
  // the others stream the cached context only, and their tables may hold more than max_chunks rows.
  std::string policy = "max";
  // Plain guided's cost file (--cost's), which `policy` does not name: what verify --plan re-derives
  // the choice by. Empty for every other policy, guided:PATH included (its name holds the path).
  std::string guide_cost_file;
  std::optional<MemoryFigures> memory;
  std::optional<TimeFigures> time;
  // LSE merges of one query row's running output under the policy's loop (policies' QueryMerges): the
  // most and p99 over the batch's query rows. Each rounds a bf16 state (docs/prefill.md, Many merges).
  std::optional<std::pair<uint64_t, uint64_t>> merges_per_query;
  // Set when the policy cannot plan the batch, with why (a run comparing several policies shows a
  // refusal instead of stopping; the tables are then empty).
  std::string refused;
  std::string backend;  // "cpu" or "gpu"
  std::string planner;  // "cpu-reference", "gpu-fast", ...
  std::optional<std::string> device;
  PlanShape shape;
  PlanTables tables;
  check::Verification verification;
  std::vector<std::pair<std::string, double>> timings_us;
};

// One JSON object, the contract of interface.md (keys in the documented order).
std::string format_plan_json(const PlanReport& report);
// Long form: one row per chunk and column, the sentinel column (sequence = batch_size) with an empty cache_offset.
std::string format_plan_csv(const PlanReport& report, bool header = true);
// For people: one row per used chunk, with at most `max_sequences` sequences spelled out per chunk.
std::string format_plan_table(const PlanReport& report, size_t max_sequences = 8);

}  // namespace mlaplan::io
