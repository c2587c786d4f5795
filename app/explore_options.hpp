// Options the explorer's subcommands share: the chunking policy (run, sweep), the model (run,
// sweep) and the workload with its batch formation (gen, sweep).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mlaplan/cost/cost_model.hpp"
#include "mlaplan/workloads/batch_formation.hpp"
#include "mlaplan/models/model.hpp"
#include "mlaplan/policies/policy.hpp"
#include "mlaplan/io/plan_report.hpp"

namespace mlaplan::cli {

// --policy (one name for run, a list for sweep), --packed vllm|trtllm, --split-align A,
// --even-split vllm|sglang.
struct PolicyOptions {
  std::string policy = "max";
  std::string packed;      // "" (not given): vllm
  uint32_t split_align = 0;  // 0: not given
  std::string even_split;  // "" (not given): vllm
};
void add_policy_options(CLI::App& cmd, PolicyOptions& options, bool list);
policies::Policy make_policy(policies::PolicyKind kind, const PolicyOptions& options);
// The list of --policy; InputError for a variant option (--packed, --split-align, --even-split) that
// changes none of its policies.
std::vector<policies::Policy> make_policies(const PolicyOptions& options);

// --model NAME (a list for sweep), --model-config FILE, --tp N (a list for sweep), --dtype bf16|fp8.
struct ModelOptions {
  std::string models;  // comma list of presets
  std::string config;  // a Hugging Face config.json
  std::string tps = "1";
  std::string dtype = "bf16";
};
void add_model_options(CLI::App& cmd, ModelOptions& options, bool list);
std::vector<models::ModelDims> make_models(const ModelOptions& options);  // empty when none is given
std::vector<uint32_t> make_tps(const ModelOptions& options);
// The memory figures of `run` for one model (the first given) at N rows; nothing without a model.
std::optional<io::MemoryFigures> memory_figures(const ModelOptions& options, uint32_t buffer_token_size);

// --cost FILE (run: one; sweep: one per model and TP swept): cost models whose predicted times join the
// output. Each file is claimed as an input and read (exit 2 with the file and the field on a bad one).
void add_cost_option(CLI::App& cmd, std::vector<std::string>& files, bool list);
// --timing eager|graph (default graph): how --cost prices, CUDA-graph replay or eagerly with the host's
// dispatch (docs/cost-model.md, Eager time).
void add_timing_option(CLI::App& cmd, std::string& timing);
// Whether --timing asks for eager timing; InputError where it is given (`given`: on the line, graph
// too) without --cost: nothing is priced, so it would change nothing.
bool eager_timing(const std::string& timing, bool with_cost, bool given);
std::vector<cost::CostModel> load_costs(const std::vector<std::string>& files);

// The models and TPs to predict for: --model/--tp where given, else the cost files' own (their models
// as presets); then every file must match a (model, TP) and every (model, TP) have a file
// (sweeps::check_costs). `tp_given`: --tp on the line; `command` ("run", "sweep") names it in the messages.
void resolve_cost_models(const std::vector<cost::CostModel>& costs, const ModelOptions& options, bool tp_given,
                         std::vector<models::ModelDims>& models, std::vector<uint32_t>& tps, const std::string& command, bool eager = false);

// --workload NAME | --lengths FILE.csv, --seed, and the batch formation: --token-budget T
// (default) | --batch-size LO[:HI], --max-sequences S.
struct WorkloadOptions {
  std::string workload;
  std::string lengths;
  uint64_t seed = 1;
  bool seed_given = false;  // --seed on the line: refused where nothing is drawn
  uint32_t token_budget = 8192;
  std::string batch_size;  // "LO:HI" or "B"; set: batches by size instead of by token budget
  uint32_t max_sequences = 256;
  uint64_t max_model_len = 0;  // 0: no cap
  // --replay: a request trace (Mooncake JSONL or Azure CSV) replayed through a prefix cache.
  std::string replay;
  std::string replay_format = "auto";
  uint32_t replay_block_size = 512;
  uint64_t prefix_cache_tokens = 0;  // 0: unlimited
  bool arrivals = false;
  double step_ms = 0;
};
void add_workload_options(CLI::App& cmd, WorkloadOptions& options);
bool has_workload(const WorkloadOptions& options);
std::unique_ptr<workloads::RequestSource> make_source(const WorkloadOptions& options);  // InputError when none is given
// The replay's statistics ("12,031 requests: 37.4% of input tokens cached (...)"), for a note, when
// the source replays a trace; empty otherwise.
std::string replay_summary(const workloads::RequestSource& source);
workloads::BatchFormation make_formation(const WorkloadOptions& options);

}  // namespace mlaplan::cli
