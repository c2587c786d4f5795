// Choosing a buffer from a sweep: per policy, chunk count, model and TP, the smallest buffer whose
// memory fits a budget and whose batches need at most K iterations at a quantile (objective
// iterations) or take a step time at the quantile within P% of the group's best on the grid (objective
// time, from a cost model), with the reason each smaller buffer fails. With a cost model, the memory
// is what each batch's dispatched path holds (TimeStats::memory_rows), and a group whose engine takes
// every batch whole without a buffer on the cost file's GPU has no buffer to choose: it says so.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mlaplan/sweeps/sweep.hpp"

namespace mlaplan::sweeps {

enum class Objective { iterations, time };

struct RecommendOptions {
  Objective objective = Objective::iterations;
  uint32_t max_iterations = 1;           // K (objective iterations)
  double within = 0.05;                  // P / 100 (objective time): how far above the best time a buffer may be
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
  // Objective time: the group's fastest row at the quantile, and what the next larger buffer than
  // the chosen one would save and cost ("" when there is none).
  std::optional<size_t> best;
  std::string next_larger;
  // Where the engine runs every batch of every row without a buffer (TensorRT-LLM below SM100): why,
  // and `row` is none; the same time and memory at every buffer, in the group's first row.
  std::string whole_context;
  std::optional<size_t> whole_row;
};

// One recommendation per group of rows sharing policy, M, model and TP. Throws InputError when a
// memory budget is given without a model, or objective time without predicted times (--cost).
std::vector<Recommendation> recommend(const SweepResult& sweep, const RecommendOptions& options);

// "p99", "p99.9", "p100", "max" (any case), or the share itself, "0.99", "0.999", "1": a quantile in
// (0, 1]; InputError naming --quantile (a bare number above 1, "99", is refused as ambiguous).
double parse_quantile(const std::string& text);
// "p99" for 0.99, "p99.9" for 0.999, "max" for 1.
std::string quantile_name(double q);
// "8GiB", "512 MiB", "1.5GB", "1073741824": bytes; InputError naming `option` (--memory-budget, --memory-limit).
uint64_t parse_byte_size(const std::string& text, const std::string& option = "--memory-budget");
// "5%", "5" or "0.5%": a share above 0 (0.05); InputError naming --within.
double parse_within(const std::string& text);
// Milliseconds with the digits a step time needs: "12.3 ms", "0.412 ms".
std::string format_ms(double ms);

}  // namespace mlaplan::sweeps
