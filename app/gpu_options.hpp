// --gpu NAME and --attention STACK (run, sweep): the GPU as an axis. --gpu picks the shipped cost file
// for --model, --tp, --dtype and the attention stack (cost/gpu.hpp), or checks that the --cost files
// were calibrated on it; the files are found relative to the executable (<prefix>/share/mlaplan/costs
// after `cmake --install`) or, in a build tree, in the source tree's costs/, so --gpu works from any
// folder.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "explore_options.hpp"
#include "mlaplan/cost/cost_model.hpp"
#include "mlaplan/policies/policy.hpp"

namespace mlaplan::cli {

struct GpuOptions {
  std::string gpu;        // --gpu: "" not given
  std::string attention;  // --attention: "" not given (fa3, what the engines run on Hopper)
  std::string loop;       // --loop: "" not given (engine: the engines' loop), or fused (mlaplan's own)
};
void add_gpu_options(CLI::App& cmd, GpuOptions& options);

// The folders the shipped cost files are under: the install's, then (a build tree) the source tree's.
std::vector<std::string> cost_roots();

// The cost files to read: --cost's as given, or with --gpu alone the shipped file of each --model and
// --tp. InputError for --attention without --gpu, and --gpu without --model or with no shipped file.
std::vector<std::string> gpu_cost_files(const GpuOptions& options, const ModelOptions& model,
                                        const std::vector<std::string>& costs);

// Beside --gpu's files for the engines' loop (no --cost, no --loop fused): mlaplan's fused loop's files for
// the same GPU, models, TPs, dtype and stack, which sweep's recommendation prices beside the engines'. Empty
// (nothing to say) where any model and TP has none.
std::vector<std::string> fused_loop_cost_files(const GpuOptions& options, const ModelOptions& model,
                                               const std::vector<std::string>& costs);

// Once read: under --gpu (or --attention) each file is for that GPU (and stack), else InputError; where
// this machine has a GPU that is not the files', one `mlaplan: warning:` line on stderr.
void check_gpu_costs(const GpuOptions& options, const std::vector<cost::CostModel>& costs);

// Under --gpu, the cost file of each guided:FILE is that GPU's too, else InputError.
void check_guide_gpus(const GpuOptions& options, const std::vector<policies::Policy>& policies);

// The first lines of a table's answer under --gpu: the GPU and the file of each model and TP; "" without
// --gpu.
std::string gpu_header(const GpuOptions& options, const std::vector<cost::CostModel>& costs);
// "its held-out check missed the targets on coding-agent (median 2.2% > 2%; ...)": for a file whose
// heldout_missed is not empty (gpu_header's line under the file, or --cost's warning).
std::string heldout_note(const cost::CostModel& c);

}  // namespace mlaplan::cli
