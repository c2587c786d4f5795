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

#include "mlaplan/policies/engines.hpp"
#include "mlaplan/sweeps/sweep.hpp"

namespace mlaplan::sweeps {

enum class Objective { iterations, time };

struct RecommendOptions {
  Objective objective = Objective::iterations;
  uint32_t max_iterations = 1;           // K (objective iterations)
  double within = 0.05;                  // P / 100 (objective time): how far above the best time a buffer may be
  double quantile = 0.99;                // q: the share of batches that must meet K
  std::optional<uint64_t> memory_budget; // bytes, for the buffer plus the K concat buffer
  // The user's settings each engine derives its default buffer from; set: each group shows its
  // engine's default (Recommendation::engine_default) beside the choice.
  std::optional<policies::EngineSettings> engines;
  // The ends of the grid the user asked for (the sweep may add the engines' defaults); 0: the rows'.
  uint32_t grid_smallest = 0, grid_largest = 0;
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
  // With RecommendOptions::engines: the engine running the group's plan, its default buffer and the
  // group's row at that buffer (none where the sweep lacks it).
  std::optional<policies::EngineDefault> engine_default;
  std::optional<size_t> default_row;
  // Where the choice (or, with none, the search) stops at an end of the grid: "largest" or
  // "smallest", and the grid to sweep next ("--buffer-tokens 524288:2097152:x2"); "" otherwise.
  std::string grid_edge;
  std::string next_grid;
  // mlaplan's fused loop beside the choice (compare_fused_loop, objective time): the fused sweep's row
  // at the chosen buffer, and its smallest buffer whose time at the quantile is at most the choice's
  // (none where no buffer of the grid is that fast). Indices into the fused sweep's rows.
  std::optional<size_t> fused_row, fused_same_time;
};

// One recommendation per group of rows sharing policy, M, model and TP. Throws InputError when a
// memory budget is given without a model, or objective time without predicted times (--cost).
std::vector<Recommendation> recommend(const SweepResult& sweep, const RecommendOptions& options);

// Beside each recommendation of `engines` with a choice, mlaplan's fused loop (Recommendation::fused_row
// and fused_same_time): `fused` is the same batches and grid priced by the fused loop's cost files. Its
// rows are matched by group and buffer; a group it lacks gains nothing.
void compare_fused_loop(std::vector<Recommendation>& recs, const SweepResult& engines, const SweepResult& fused,
                        const RecommendOptions& options);

// The rows of K/V a row holds at once: its buffer, or with a cost model what its dispatched path holds.
uint64_t memory_rows(const SweepRow& r);
// What a row reserves on each GPU for its memory_rows: the gathered latent, the up-projected K/V and
// the K concat (BufferMemory::reserved_bytes), or priced by mlaplan's fused loop (SweepRow::fused_loop)
// its K and V alone (fused_loop_bytes). 0 without a model.
uint64_t reserved_bytes(const SweepRow& r);
// What --memory-budget checks: the K/V buffer and the K concat (total_bytes), or the fused loop's K and V.
uint64_t held_bytes(const SweepRow& r);
// The same for `rows` rows of a model's buffer, the loop named by `fused_loop` (a picture's axis ticks).
uint64_t reserved_bytes(const models::BufferMemory& m, bool fused_loop, uint64_t rows);
uint64_t held_bytes(const models::BufferMemory& m, bool fused_loop, uint64_t rows);
// "K 3.00 GiB + V 2.00 GiB": the fused loop's buffers for `rows`.
std::string fused_loop_parts(const models::BufferMemory& m, uint64_t rows);
// A step's mean time in ms over the batches the row prices (refused batches left out; none: NaN).
double priced_mean_ms(const SweepRow& r);
// "2 of 10,000 batches (0.02%)": a count of refused batches as people read it.
std::string refused_text(uint64_t refused, uint64_t batches);
// The grid to sweep past an end: above `largest`, {2x}:{8x}:x2; below `smallest`, {smallest/8}:{smallest/2}:x2
// (clamped to 1 .. 2^31 - 1); "" where there is none.
std::string grid_beyond(uint32_t edge, bool larger);
// "14,444": a count with thousands separators.
std::string with_commas(uint64_t n);

// "p99", "p99.9", "p100", "max" (any case), or the share itself, "0.99", "0.999", "1": a quantile in
// (0, 1]; InputError naming --quantile (a bare number above 1, "99", is refused as ambiguous).
double parse_quantile(const std::string& text);
// "p99" for 0.99, "p99.9" for 0.999, "max" for 1.
std::string quantile_name(double q);
// "8GiB", "512 MiB", "1.5GB", "1073741824": bytes; InputError naming `option` (--memory-budget, --memory-limit).
uint64_t parse_byte_size(const std::string& text, const std::string& option = "--memory-budget");
// "5%", "5" or "0.5%": a share above 0 (0.05); InputError naming --within.
double parse_within(const std::string& text);
// Milliseconds with the digits a step time needs: "12.3 ms", "0.412 ms"; where there is no time (an
// infinite one, refused batches past the quantile), "no time (refused batches)".
std::string format_ms(double ms);
// The number alone, with those digits: "12.3", "0.412" (a finite ms).
std::string ms_digits(double ms);

}  // namespace mlaplan::sweeps
