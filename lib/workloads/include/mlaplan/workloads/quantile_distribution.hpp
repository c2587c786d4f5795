// A token-length distribution given by quantile points (published percentiles), sampled by inverse
// transform. The workload presets are built from these; see docs/workloads.md.
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace mlaplan::workloads {

// The largest value a QuantileDistribution may hold: 2^31 - 1 tokens.
inline constexpr double kMaxQuantileValue = 2147483647.0;

// A uniform double in [0, 1) from the top 53 bits of one rng() call. std::mt19937_64 is fully
// specified by the standard, so (unlike std::uniform_real_distribution) this gives the same
// numbers on every standard library.
double uniform01(std::mt19937_64& rng);

// A length distribution by its quantile function: piecewise linear in log(length) between the
// points (p, value), p = 0 at the minimum and p = 1 at the maximum. Between two points with
// values a <= b the quantile is a * (b / a)^t, t the position of p between the two p's.
class QuantileDistribution {
 public:
  // p strictly increasing from exactly 0 to exactly 1 (so at least 2 points); values finite,
  // non-decreasing, 1 <= value <= 2^31 - 1. Otherwise an InputError "quantile points: ...".
  explicit QuantileDistribution(std::vector<std::pair<double, double>> points);

  // The quantile at p (clamped to [0, 1]); exactly the given value at each point's p.
  double quantile(double p) const;

  // round(quantile(u)), u = uniform01(rng): one rng() call per sample; always in
  // [round(min()), round(max())] and at least 1.
  uint32_t sample(std::mt19937_64& rng) const;

  // The mean of the continuous fitted distribution (each log-linear piece integrated in closed
  // form: (p1 - p0) * (b - a) / ln(b / a)). The mean of sample() differs by rounding (< 0.5).
  double mean() const;

  double min() const { return points_.front().second; }
  double max() const { return points_.back().second; }
  const std::vector<std::pair<double, double>>& points() const { return points_; }

 private:
  std::vector<std::pair<double, double>> points_;
};

}  // namespace mlaplan::workloads
