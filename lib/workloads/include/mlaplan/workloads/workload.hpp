// Workload presets: request-length distributions of cached (already in the KV cache) and new
// tokens, each built from published statistics of a public trace or paper, and the draws from
// them. docs/workloads.md gives every preset's sources, numbers, fitted points and assumptions.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "mlaplan/workloads/quantile_distribution.hpp"

namespace mlaplan::workloads {

// One request: tokens already in the cache (its context) and new tokens to prefill.
struct Request {
  uint32_t cached_tokens = 0;
  uint32_t new_tokens = 0;  // >= 1 for a real request
};
inline bool operator==(const Request& a, const Request& b) {
  return a.cached_tokens == b.cached_tokens && a.new_tokens == b.new_tokens;
}
inline bool operator!=(const Request& a, const Request& b) { return !(a == b); }

// A published quantile a preset reproduces (the test checks each within 5% over 100,000 draws).
struct QuantileClaim {
  std::string what;  // "input" (cached + new), "cached" or "new"
  double p;          // 0.5 for the median
  double value;      // the published figure, in tokens
};

// A published mean the fitted distribution reproduces (the test checks mean() within 5%).
struct MeanClaim {
  std::string what;  // "input", "cached", "new" or "response" (the distribution of that name)
  double value;
};

// How a preset turns its distributions into (cached, new).
enum class SplitModel {
  // All new: cached = 0, new = an `input` draw (traces with prompt lengths only, no reuse data).
  all_new,
  // total = an `input` draw; cached = cached_share of it rounded down to whole blocks of
  // block_tokens; new = the rest (>= 1).
  block_share,
  // cached = a `cached` draw, new = a `new_tokens` draw, independently.
  independent,
  // new = a `new_tokens` draw (this turn's prompt). With probability follow_up_share the request
  // continues a conversation: cached = one earlier exchange, a `new_tokens` draw plus a
  // `response` draw; otherwise cached = 0.
  chat_turns,
};
const char* to_string(SplitModel m);

struct WorkloadPreset {
  std::string name;
  std::string description;
  std::string source;  // URLs / paper names with the published numbers
  std::vector<QuantileClaim> claims;
  std::vector<MeanClaim> means;

  SplitModel split = SplitModel::all_new;
  std::optional<QuantileDistribution> input;       // all_new, block_share: cached + new
  std::optional<QuantileDistribution> cached;      // independent
  std::optional<QuantileDistribution> new_tokens;  // independent, chat_turns
  std::optional<QuantileDistribution> response;    // chat_turns: the earlier exchange's response
  double cached_share = 0;                         // block_share, in [0, 1)
  uint32_t block_tokens = 512;                     // block_share
  double follow_up_share = 0;                      // chat_turns, in [0, 1]

  // One request; cached + new < 2^31 and new >= 1 always.
  Request draw(std::mt19937_64& rng) const;

  // The largest cached + new that draw() can return (below 2^31 for every preset).
  uint64_t max_total_tokens() const;
};

// azure-code, azure-conv, mooncake-conv, mooncake-synthetic, coding-agent, coding-agent-claude,
// short-chat, in that order.
const std::vector<WorkloadPreset>& workload_presets();

// The preset names joined with ", " (for help texts and messages).
std::string workload_preset_names();

// The preset of that name (ASCII case-insensitive); otherwise an InputError "--workload X: unknown
// workload; choose one of azure-code, ... or give --lengths FILE.csv".
const WorkloadPreset& find_workload_preset(const std::string& name);

// `count` requests drawn with std::mt19937_64(seed): the same requests for the same seed on every
// platform.
std::vector<Request> draw_requests(const WorkloadPreset& preset, size_t count, uint64_t seed);

}  // namespace mlaplan::workloads
