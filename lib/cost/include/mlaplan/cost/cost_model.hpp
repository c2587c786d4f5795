// A cost model: per-unit times of the terms in features.hpp, calibrated on one GPU with one set of
// kernels (python -m mlaplan.calibrate) or written by hand, for one model, TP and dtype. Linear in its
// coefficients: a layer's predicted time is the sum over terms of coefficient x count. The file format
// is in docs/cost-model.md.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "mlaplan/cost/features.hpp"

namespace mlaplan::cost {

inline constexpr const char* kCostFormat = "mlaplan-cost-model";
inline constexpr int kCostFormatVersion = 1;

struct CostModel {
  std::string path;                      // the file it was read from
  std::string model;                     // a model preset's name or a config's model_type: "deepseek-v3"
  uint32_t tp = 1;
  std::string dtype;                     // "bf16" or "fp8"
  Geometry geometry;                     // geometry.heads: the local heads, num_heads / tp
  std::array<double, kTerms> coefficients{};  // microseconds per unit of each term, >= 0
  // What a prediction holds for, as the file states it.
  std::string gpu;                       // "NVIDIA H200"
  std::string attention;                 // the attention kernel: "flash (torch varlen_attn, FlashAttention-2)"
  std::string merge;                     // "fused (Triton)"
  std::string timing;                    // what was fitted: "eager" (host dispatch included) or "graph"
  std::string date;                      // of the calibration: "2026-12-01"

  double coefficient(Term t) const { return coefficients[static_cast<size_t>(t)]; }
  // Microseconds per layer: the sum over terms of coefficient x count.
  double predict_us(const Features& f) const;
  // "NVIDIA H200, flash (...), fused (...) merge, eager timing, calibrated 2026-12-01": what the
  // prediction holds for, for the output's header.
  std::string describe() const;
};

// Parses a cost file. Every problem is one InputError "PATH: FIELD: problem; fix": not JSON, another
// format or version, a missing or unknown term, a coefficient that is negative or not a number, a
// geometry value of 0.
CostModel parse_cost_model(const std::string& text, const std::string& path);

// Reads the file (io's input-file refusals) and parses it.
CostModel read_cost_model(const std::string& path);

}  // namespace mlaplan::cost
