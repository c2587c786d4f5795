// Choosing a buffer from a sweep: per policy, chunk count, model and TP, the smallest buffer whose
// batches need at most K iterations at a quantile and whose memory fits a budget, with the reason
// each smaller buffer fails.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mlaplan/explore/sweep.hpp"

namespace mlaplan::explore {

struct RecommendOptions {
  uint32_t max_iterations = 1;           // K
  double quantile = 0.99;                // q: the share of batches that must meet K
  std::optional<uint64_t> memory_budget; // bytes, for the buffer plus the K concat buffer
};

struct Rejection {
  uint32_t buffer_tokens = 0;
  std::string why;  // "p99 needs 3 iterations > 2", "memory 9.00 GiB > budget 8.00 GiB", ...
};

struct Recommendation {
  std::string group;                // "max M=16 deepseek-v3 TP8", "packed"
  std::optional<size_t> row;        // index into SweepResult::rows of the chosen setting
  std::vector<Rejection> rejected;  // every smaller buffer (all of them when none qualifies), smallest first
};

// One recommendation per group of rows sharing policy, M, model and TP. Throws InputError when a
// memory budget is given without a model.
std::vector<Recommendation> recommend(const SweepResult& sweep, const RecommendOptions& options);

// "p99", "p99.9", "p100", "max" (any case), or the share itself, "0.99", "0.999", "1": a quantile in
// (0, 1]; InputError naming --quantile (a bare number above 1, "99", is refused as ambiguous).
double parse_quantile(const std::string& text);
// "p99" for 0.99, "p99.9" for 0.999, "max" for 1.
std::string quantile_name(double q);
// "8GiB", "512 MiB", "1.5GB", "1073741824": bytes; InputError naming `option` (--memory-budget, --memory-limit).
uint64_t parse_byte_size(const std::string& text, const std::string& option = "--memory-budget");

}  // namespace mlaplan::explore
