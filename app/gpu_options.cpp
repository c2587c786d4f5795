#include "gpu_options.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "cli_common.hpp"
#include "mlaplan/cost/gpu.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/io/printable.hpp"
#include "mlaplan/io/text_wrap.hpp"
#include "mlaplan/models/model.hpp"

namespace mlaplan::cli {

namespace fs = std::filesystem;

namespace {
// --loop's word as cost files spell it (kernels.up_projection).
std::string up_projection(const GpuOptions& o) { return o.loop == "fused" ? "fused" : "unfused"; }

// --gpu's shipped file of each model and --tp for the loop `up` ("unfused" or "fused"); InputError where
// one is missing.
std::vector<std::string> shipped_files(const GpuOptions& o, const std::vector<models::ModelDims>& models,
                                       const ModelOptions& model, const std::string& up) {
  std::vector<std::string> files;
  const std::vector<std::string> roots = cost_roots();
  for (const models::ModelDims& m : models)
    for (uint32_t tp : make_tps(model))
      files.push_back(cost::find_cost_file(roots, {o.gpu, m.name, tp, model.dtype, o.attention.empty() ? "fa3" : o.attention, up},
                                           "--gpu " + io::printable(o.gpu)));
  return files;
}
}  // namespace

void add_gpu_options(CLI::App& cmd, GpuOptions& o) {
  cmd.add_option("--gpu", o.gpu,
                 "The GPU to price for: h100, h200 or the name nvidia-smi prints (any case). Takes the shipped cost file "
                 "for --model, --tp and --attention (docs/cost-model.md, Which file), or checks that --cost's file was "
                 "calibrated on it")
      ->type_name("NAME");
  cmd.add_option("--attention", o.attention,
                 "With --gpu: the attention kernels whose cost file it takes, fa3 (default: what the engines run on "
                 "Hopper) or fa2")
      ->transform(one_of({"fa3", "fa2"}, {{"flash", "fa2"}}));
  cmd.add_option("--loop", o.loop,
                 "With --gpu: whose loop its cost file prices, engine (default: each engine's own gather, up-projection "
                 "and concat; where the fused loop's file ships, sweep --recommend --objective time shows it beside the "
                 "choice) or fused (mlaplan's own loop, one fused up-projection kernel holding K and V alone: the same "
                 "plan, the time and memory it would take; python -m mlaplan.prefill --policy NAME+fused runs it)")
      ->transform(one_of({"engine", "fused"}, {}));
}

std::vector<std::string> cost_roots() {
  std::vector<std::string> roots;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  // <prefix>/bin/mlaplan finds <prefix>/share/mlaplan/costs (the path from bin to it, from CMake).
  if (!ec) roots.push_back((exe.parent_path() / MLAPLAN_COSTS_FROM_BIN).lexically_normal().string());
  // A build tree's executable has no install beside it: the source tree's files.
  roots.push_back(MLAPLAN_SOURCE_COSTS_DIR);
  return roots;
}

std::vector<std::string> gpu_cost_files(const GpuOptions& o, const ModelOptions& model, const std::vector<std::string>& costs) {
  if (!o.attention.empty() && o.gpu.empty())
    throw InputError("--attention: it picks the cost file --gpu takes; add --gpu NAME (a --cost file names its own kernels)");
  if (!o.loop.empty() && o.gpu.empty())
    throw InputError("--loop: it picks the cost file --gpu takes; add --gpu NAME (a --cost file names its own loop)");
  if (o.gpu.empty() || !costs.empty()) return costs;
  const std::string option = "--gpu " + io::printable(o.gpu);
  const std::vector<models::ModelDims> models = make_models(model);
  if (models.empty())
    throw InputError(fmt::format("{}: it takes the shipped cost file for --model and --tp; add --model (e.g. deepseek-v3) and "
                                 "--tp (e.g. 8)",
                                 option));
  return shipped_files(o, models, model, up_projection(o));
}

std::vector<std::string> fused_loop_cost_files(const GpuOptions& o, const ModelOptions& model,
                                               const std::vector<std::string>& costs) {
  if (o.gpu.empty() || !costs.empty() || o.loop == "fused") return {};
  try {
    return shipped_files(o, make_models(model), model, "fused");
  } catch (const InputError&) {
    return {};  // none shipped for some model and TP: the recommendation is the engines' alone
  }
}

void check_gpu_costs(const GpuOptions& o, const std::vector<cost::CostModel>& costs) {
  if (costs.empty()) return;
  for (const cost::CostModel& c : costs) {
    if (!o.gpu.empty()) cost::require_gpu(c, o.gpu, "--gpu");
    if (!o.attention.empty() && cost::attention_stack(c) != o.attention)
      throw InputError(fmt::format("{}: kernels.attention: calibrated with {}, and --attention names {}; give the file of "
                                   "those kernels or drop --attention",
                                   io::printable(c.path), io::printable(c.attention), o.attention));
    if (!o.loop.empty() && c.up_projection != up_projection(o))
      throw InputError(fmt::format("{}: kernels.up_projection: calibrated on the {} loop, and --loop names {}; give the file "
                                   "of that loop or drop --loop",
                                   io::printable(c.path), c.up_projection == "fused" ? "fused" : "engine", o.loop));
  }
  if (o.gpu.empty())  // --cost FILE: no header names the file, so the warning does
    for (const cost::CostModel& c : costs)
      if (!c.heldout_missed.empty())
        print_stderr(fmt::format("mlaplan: warning: {}: {}\n", io::printable(c.path), heldout_note(c)));
  std::string why;
  const std::optional<std::string> here = profile::find_usable_gpu(&why);
  if (!here) return;  // no GPU here: nothing to compare the files with
  for (const cost::CostModel& c : costs)
    if (const std::optional<std::string> w = cost::machine_gpu_warning(c, *here)) {
      print_stderr(fmt::format("mlaplan: warning: {}\n", *w));
      return;  // one line: the files of one command are one GPU's (--gpu), or the first says it
    }
}

void check_guide_gpus(const GpuOptions& o, const std::vector<policies::Policy>& policies) {
  if (o.gpu.empty()) return;
  for (const policies::Policy& p : policies)
    if (p.guide && !p.guide_path.empty()) cost::require_gpu(*p.guide, o.gpu, "--gpu");  // guided:FILE's own file
}

// Where a shipped or given file missed its own held-out targets: which workloads, by how much.
std::string heldout_note(const cost::CostModel& c) {
  std::string names;
  for (const std::string& m : c.heldout_missed) names += (names.empty() ? "" : ", ") + io::printable(m);
  return fmt::format("its held-out check missed the targets on {}", names);
}

std::string gpu_header(const GpuOptions& o, const std::vector<cost::CostModel>& costs) {
  if (o.gpu.empty()) return "";
  std::string out;
  for (const cost::CostModel& c : costs) {
    // The path on a line of its own under the labels' column (shortened where long): within 120
    // columns, and the same two lines whatever its length.
    out += fmt::format("gpu       {} (--gpu {}): {} TP {}{} priced by\n          {}\n", io::printable(c.gpu),
                       io::printable(o.gpu), io::printable(c.model), c.tp,
                       c.up_projection == "fused" ? ", mlaplan's fused loop," : "", io::shorten_path(io::printable(c.path)));
    if (!c.heldout_missed.empty()) out += "          " + heldout_note(c) + "\n";
  }
  return io::wrap_lines(out) + "\n";
}

}  // namespace mlaplan::cli
