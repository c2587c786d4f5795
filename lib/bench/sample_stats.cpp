#include "mlaplan/bench/sample_stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace mlaplan::bench {

namespace {
double quantile(const std::vector<double>& sorted, double q) {  // linear interpolation
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}
}  // namespace

SampleStats summarize(std::vector<double> samples) {
  SampleStats s;
  s.samples = samples.size();
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.min = samples.front();
  s.max = samples.back();
  s.median = quantile(samples, 0.5);
  s.p25 = quantile(samples, 0.25);
  s.p75 = quantile(samples, 0.75);
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  // Ranks n/2 -+ 1.96 sqrt(n)/2 bound the median with ~95% confidence, whatever the distribution.
  const double n = static_cast<double>(samples.size());
  const double half = 1.96 * std::sqrt(n) / 2.0;
  const auto lo = static_cast<size_t>(std::max(0.0, std::floor(n / 2.0 - half)));
  const auto hi = static_cast<size_t>(std::min(n - 1.0, std::ceil(n / 2.0 + half)));
  s.noise = s.median > 0 ? (samples[hi] - samples[lo]) / 2.0 / s.median : 0;
  return s;
}

bool should_stop(const StoppingRule& rule, const std::vector<double>& samples, double elapsed_s) {
  const size_t n = samples.size();
  // At the time cap, stop, but with at least 5 samples (a median and a meaningful spread) even
  // when one sample alone is longer than the whole budget.
  if (elapsed_s >= rule.max_time_s && n >= std::min<size_t>(5, rule.min_samples)) return true;
  if (n < rule.min_samples) return false;
  const bool checkpoint = n == rule.min_samples || (n % 8 == 0 && (n & (n - 1)) == 0) || n % 256 == 0;
  return checkpoint && summarize(samples).noise <= rule.max_noise;
}

}  // namespace mlaplan::bench
