#include "mlaplan/bench/timed_batches.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "mlaplan/errors.hpp"
#include "mlaplan/plan_shape.hpp"

namespace mlaplan::bench {

LengthDistribution parse_distribution(const std::string& name) {
  if (name == "fixed") return LengthDistribution::fixed;
  if (name == "uniform") return LengthDistribution::uniform;
  if (name == "lognormal") return LengthDistribution::lognormal;
  if (name == "zipf") return LengthDistribution::zipf;
  throw InputError(fmt::format("--distribution: '{}' is not a distribution; use fixed, uniform, lognormal or zipf", name));
}

const char* to_string(LengthDistribution d) {
  switch (d) {
    case LengthDistribution::fixed: return "fixed";
    case LengthDistribution::uniform: return "uniform";
    case LengthDistribution::lognormal: return "lognormal";
    case LengthDistribution::zipf: return "zipf";
  }
  return "?";
}

namespace {

// Total tokens per sequence (cached + new), mean about `mean`, each at least 1.
class LengthSampler {
 public:
  LengthSampler(LengthDistribution d, uint32_t mean) : d_(d), mean_(mean) {
    if (d == LengthDistribution::zipf) {
      // Rank k in 1..1000 with P(k) ~ k^-1.1: many short sequences and a few very long ones,
      // scaled so the mean is `mean`.
      std::vector<double> weights(1000);
      double sum = 0, ksum = 0;
      for (size_t k = 1; k <= weights.size(); ++k) {
        weights[k - 1] = std::pow(static_cast<double>(k), -1.1);
        sum += weights[k - 1];
        ksum += weights[k - 1] * static_cast<double>(k);
      }
      zipf_ = std::discrete_distribution<uint32_t>(weights.begin(), weights.end());
      zipf_scale_ = mean / (ksum / sum);
    }
  }

  uint32_t operator()(std::mt19937_64& rng) {
    double v = mean_;
    switch (d_) {
      case LengthDistribution::fixed: break;
      case LengthDistribution::uniform:
        v = std::uniform_int_distribution<uint64_t>(1, 2 * uint64_t{mean_} - 1)(rng);
        break;
      case LengthDistribution::lognormal: {
        constexpr double sigma = 1.0;  // heavy tail: the longest of a million is ~100x the median
        v = std::lognormal_distribution<double>(std::log(static_cast<double>(mean_)) - sigma * sigma / 2, sigma)(rng);
        break;
      }
      case LengthDistribution::zipf:
        v = (zipf_(rng) + 1) * zipf_scale_;
        break;
    }
    return static_cast<uint32_t>(std::clamp(std::llround(v), 1LL, static_cast<long long>(std::numeric_limits<uint32_t>::max() / 2)));
  }

 private:
  LengthDistribution d_;
  uint32_t mean_;
  std::discrete_distribution<uint32_t> zipf_;
  double zipf_scale_ = 1;
};

}  // namespace

std::vector<Batch> make_input_sets(uint32_t batch_size, const TimedBatchOptions& o) {
  std::vector<Batch> sets(std::max<uint32_t>(1, o.input_sets));
  uint64_t max_e = 0;
  for (size_t i = 0; i < sets.size(); ++i) {
    std::mt19937_64 rng(o.seed * 0x9E3779B97F4A7C15ull + batch_size * 1315423911ull + i);
    LengthSampler lengths(o.distribution, o.mean_length);
    Batch& b = sets[i];
    b.page_size = o.page_size;
    b.max_chunks = o.max_chunks;
    b.cache_lengths.resize(batch_size);
    b.input_row_offsets.resize(size_t{batch_size} + 1);
    uint64_t offset = 0, e = 0;
    b.input_row_offsets[0] = 0;
    for (uint32_t s = 0; s < batch_size; ++s) {
      const uint32_t total = lengths(rng);
      // At least one new token (it is prefill); the rest of the split is uniform.
      const uint32_t fresh = std::uniform_int_distribution<uint32_t>(1, total)(rng);
      b.cache_lengths[s] = total - fresh;
      offset += fresh;
      e += (uint64_t{total} + o.page_size - 1) / o.page_size * o.page_size;
      if (offset > std::numeric_limits<uint32_t>::max() || e > std::numeric_limits<uint32_t>::max())
        throw InputError(fmt::format(
            "--mean-length: {} sequences of about {} tokens pass 2^32 - 1 padded tokens, which 32-bit tables cannot hold; "
            "lower --mean-length or the largest of --sizes",
            batch_size, o.mean_length));
      b.input_row_offsets[s + 1] = static_cast<uint32_t>(offset);
    }
    max_e = std::max(max_e, e);
  }

  uint64_t n = o.buffer_tokens;
  if (n == 0) {
    // The largest set uses about fill x M chunks; the others at most that.
    n = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(static_cast<double>(max_e) / (o.fill * o.max_chunks))));
    if (n > uint64_t{std::numeric_limits<int32_t>::max()})
      throw InputError(fmt::format("--fill: {} sequences need a buffer of {} rows at fill {}, above 2^31 - 1; raise --max-chunks or --fill",
                                   batch_size, n, o.fill));
  }
  for (Batch& b : sets) {
    b.buffer_token_size = static_cast<uint32_t>(n);
    validate_batch(b);
    try {
      require_feasible(b);
    } catch (const InfeasibleBatch& e) {
      throw InputError(fmt::format("--buffer-tokens: batch size {}: {}; or leave --buffer-tokens out to derive it from --fill",
                                   batch_size, e.what()));
    }
  }
  return sets;
}

}  // namespace mlaplan::bench
