// A cost model: per-unit times of the terms in features.hpp, calibrated on one GPU with one set of
// kernels (python -m mlaplan.calibrate) or written by hand, for one model, TP and dtype. Linear in its
// coefficients: a layer's predicted time is the sum over terms of coefficient x count. The file format
// is in docs/cost-model.md.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mlaplan/cost/eager.hpp"
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
  // The GPU's compute capability x10 (90 for 9.0, 100 for 10.0): the file's compute_capability, or
  // where it has none, known_gpu_sm(gpu). Which path TensorRT-LLM runs depends on it
  // (policies/dispatch.hpp). 0 (never from a file) names no GPU: every policy's own loop.
  uint32_t sm = 0;
  std::string attention;                 // the attention kernel: "flash (torch varlen_attn, FlashAttention-2)"
  std::string merge;                     // "fused (Triton)"
  // The loop timed: "unfused" (the engines': a gather, kv_b_proj's GEMM, K's concat; a file without
  // kernels.up_projection) or "fused" (mlaplan's own, one kernel; prefill --policy NAME+fused).
  std::string up_projection = "unfused";
  std::string timing;                    // what was fitted: "eager" (host dispatch included) or "graph"
  std::string date;                      // of the calibration: "2026-12-01"
  // The host's dispatch cost per launch (the file's optional host section): what --timing eager
  // needs; none in a file fitted on graph timing alone.
  std::optional<HostCosts> host;
  // The workloads on which the file's own held-out check (calibrate's `heldout` section) missed its
  // targets, each "coding-agent (median 2.2% > 2%; p90 5.5% > 5%)": a file shipped though it missed
  // says so where it prices. Empty for a file that passed, had no check, or was written by hand.
  std::vector<std::string> heldout_missed;

  double coefficient(Term t) const { return coefficients[static_cast<size_t>(t)]; }
  // Microseconds per layer: the sum over terms of coefficient x count.
  double predict_us(const Features& f) const;
  // "NVIDIA H200, flash (...), fused (...) merge, graph timing, calibrated 2026-12-01": what the
  // prediction holds for, for the output's header; `eager`: priced with the host section too
  // ("graph timing + host costs, priced eagerly").
  std::string describe(bool eager = false) const;
};

// "9.0" for 90, "10.0" for 100: a compute capability as a cost file and torch write it.
std::string compute_capability_text(uint32_t sm);

// The compute capability x10 of a GPU named as CUDA names it ("NVIDIA H200", "NVIDIA A100-SXM4-80GB"):
// H100, H200, H800, H20, GH200: 90; B100, B200, GB200: 100; B300, GB300: 103; A100, A800, A30: 80;
// A10, A10G: 86; L4, L40, L40S: 89 (a whole word of the name, any case). 0 for any other name.
uint32_t known_gpu_sm(const std::string& gpu);

// Parses a cost file. Every problem is one InputError "PATH: FIELD: problem; fix": not JSON, another
// format or version, a missing or unknown term, a coefficient that is negative, above 1e6 (a second
// per unit) or not a number, a geometry value of 0, a compute_capability that is not one ("9.0" or
// 9.0), or none where the gpu is not one known_gpu_sm knows; a host section without holds_for or
// pad_v, with a launch kind missing or unknown, a host cost negative, above 1e6 or not a number, or an
// identified that is not true or false; a kernels.up_projection other than unfused or fused. Fields it
// does not price by (heldout, fit, command) are let be: heldout's verdicts are read where they have
// calibrate's shape, and passed over where not.
CostModel parse_cost_model(const std::string& text, const std::string& path);

// "grid", "sorted" or "sectioned": a geometry's scheduler as a cost file spells it.
const char* scheduler_name(Scheduler s);
// The scheduler named `name` ("" is grid, a file written before schedulers were named); false for
// another name.
bool scheduler_named(const std::string& name, Scheduler& out);

// Reads the file (io's input-file refusals) and parses it.
CostModel read_cost_model(const std::string& path);

}  // namespace mlaplan::cost
