// The batches bench plans: sequence lengths drawn from a distribution, several input sets per
// size (rotated while timing, so nothing is timed on one cached buffer), and the buffer size N
// chosen so each batch fills a given share of the chunks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlaplan/batch.hpp"

namespace mlaplan::bench {

enum class LengthDistribution { fixed, uniform, lognormal, zipf };
LengthDistribution parse_distribution(const std::string& name);  // throws InputError naming --distribution
const char* to_string(LengthDistribution d);

struct TimedBatchOptions {
  LengthDistribution distribution = LengthDistribution::lognormal;
  uint32_t mean_length = 1024;  // mean tokens per sequence (cached + new), before page padding
  uint32_t page_size = 128;
  uint32_t max_chunks = 16;
  uint32_t buffer_tokens = 0;   // N; 0 = derived from `fill`
  double fill = 0.75;           // with N derived: the share of the max_chunks chunks a batch uses
  uint64_t seed = 1;
  uint32_t input_sets = 4;
};

// `input_sets` batches of `batch_size` sequences sharing P, N and M; every one is validated and
// feasible. Throws InputError naming the option to change when that is impossible.
std::vector<Batch> make_input_sets(uint32_t batch_size, const TimedBatchOptions& options);

}  // namespace mlaplan::bench
