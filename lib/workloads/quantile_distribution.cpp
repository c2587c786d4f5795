#include "mlaplan/workloads/quantile_distribution.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "mlaplan/errors.hpp"

namespace mlaplan::workloads {

double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

QuantileDistribution::QuantileDistribution(std::vector<std::pair<double, double>> points)
    : points_(std::move(points)) {
  if (points_.size() < 2) {
    throw InputError(fmt::format("quantile points: {} given; give at least the minimum (p = 0) and the maximum (p = 1)",
                                 points_.size()));
  }
  if (points_.front().first != 0.0) {
    throw InputError(fmt::format("quantile points: the first p is {}; start at p = 0 (the minimum)", points_.front().first));
  }
  if (points_.back().first != 1.0) {
    throw InputError(fmt::format("quantile points: the last p is {}; end at p = 1 (the maximum)", points_.back().first));
  }
  for (size_t i = 0; i < points_.size(); ++i) {
    const auto [p, v] = points_[i];
    if (!std::isfinite(p) || !std::isfinite(v)) {
      throw InputError(fmt::format("quantile points: point {} ({}, {}) is not finite; give finite numbers", i, p, v));
    }
    if (v < 1.0 || v > kMaxQuantileValue) {
      throw InputError(fmt::format("quantile points: point {} has value {}; values are token counts from 1 to 2^31 - 1", i, v));
    }
    if (i > 0 && !(p > points_[i - 1].first)) {
      throw InputError(fmt::format("quantile points: point {} has p = {} after p = {}; make p strictly increasing", i, p,
                                   points_[i - 1].first));
    }
    if (i > 0 && v < points_[i - 1].second) {
      throw InputError(fmt::format("quantile points: point {} has value {} after {}; make the values non-decreasing", i, v,
                                   points_[i - 1].second));
    }
  }
}

double QuantileDistribution::quantile(double p) const {
  if (std::isnan(p)) throw InputError("quantile: p is NaN; give p in [0, 1]");
  p = std::clamp(p, 0.0, 1.0);
  // The first point whose p is > p; the piece is [hi - 1, hi].
  auto hi = std::upper_bound(points_.begin(), points_.end(), p,
                             [](double x, const std::pair<double, double>& pt) { return x < pt.first; });
  if (hi == points_.end()) return points_.back().second;  // p == 1
  const auto& [p0, v0] = *(hi - 1);
  const auto& [p1, v1] = *hi;
  if (p == p0 || v0 == v1) return v0;
  const double t = (p - p0) / (p1 - p0);
  const double v = std::exp(std::log(v0) + t * (std::log(v1) - std::log(v0)));
  return std::clamp(v, v0, v1);  // no rounding error outside the piece
}

uint32_t QuantileDistribution::sample(std::mt19937_64& rng) const {
  const double v = std::round(quantile(uniform01(rng)));
  return static_cast<uint32_t>(std::clamp(v, 1.0, kMaxQuantileValue));
}

double QuantileDistribution::mean() const {
  double sum = 0;
  for (size_t i = 1; i < points_.size(); ++i) {
    const auto [p0, a] = points_[i - 1];
    const auto [p1, b] = points_[i];
    sum += (p1 - p0) * (a == b ? a : (b - a) / std::log(b / a));
  }
  return sum;
}

}  // namespace mlaplan::workloads
