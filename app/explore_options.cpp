#include "explore_options.hpp"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "mlaplan/bench/size_list.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/workloads/lengths_csv.hpp"
#include "mlaplan/sweeps/sweep.hpp"
#include "mlaplan/replay/replay_source.hpp"
#include "cli_common.hpp"

namespace mlaplan::cli {

void add_policy_options(CLI::App& cmd, PolicyOptions& o, bool list) {
  if (list) {
    o.policy = "all";
    cmd.add_option("--policy", o.policy,
                   "Chunking policies to compare, a comma list: an engine by name, as it runs on the cost file's GPU "
                   "(vllm, sglang, trtllm, max; engines: the four); max (MAX's plan of cache + new tokens, padded to "
                   "pages, capped at max_chunks), packed (vLLM since PR 50613), even-split (vLLM before it, or SGLang); a "
                   "variant by name (packed/trtllm, even-split/sglang, ...); guided (mlaplan's own: per batch the plan "
                   "the --cost file prices cheapest; guided:COST.json names its file; docs/policies.md), waves and "
                   "waves/even (plans guided chooses from); all (max, packed, even-split, sglang, trtllm), variants (the "
                   "engines' five by algorithm)")
        ->type_name("LIST")
        ->default_str("all");
  } else {
    cmd.add_option("--policy", o.policy,
                   "Chunking policy: an engine by name, as it runs on the cost file's GPU (vllm, sglang, trtllm, max); "
                   "max (MAX's plan of cache + new tokens, padded to pages, capped at max_chunks), "
                   "packed (vLLM since PR 50613: the cached context packed in order) or even-split (the buffer "
                   "divided evenly, vLLM before PR 50613 or SGLang); a variant by name (packed/trtllm, "
                   "even-split/sglang, ...); guided (mlaplan's own: per batch the plan --cost prices cheapest on vLLM's "
                   "packed loop, or the whole context at once where it fits; guided:COST.json names another file, "
                   "guided/eager:COST.json chooses by eager time; docs/policies.md); waves (one of its plans: full "
                   "chunks, narrow sequences streamed in groups that fill the attention's waves; waves/even: the even "
                   "split's shares on that loop); or a comma list to compare them on the same batch: engines (the four), "
                   "all (max, packed, even-split, sglang, trtllm), variants (the engines' five by algorithm)")
        ->type_name("NAME|LIST")
        ->default_str("max");
  }
  cmd.add_option("--packed", o.packed,
                 "packed: vllm (split points aligned to --split-align; a request without context ends the chunk) or "
                 "trtllm (TensorRT-LLM: no alignment, such requests skipped)")
      ->transform(one_of({"vllm", "trtllm"}))
      ->default_str("vllm");
  cmd.add_option("--split-align", o.split_align, "packed (vllm): split points are multiples of A tokens (default: the page size)")
      ->type_name("A")
      ->transform(whole_number(1, 1u << 30));
  cmd.add_option("--even-split", o.even_split,
                 "even-split: vllm (share = buffer / sequences with context, rounded down to pages) or sglang "
                 "(share = buffer / batch size)")
      ->transform(one_of({"vllm", "sglang"}))
      ->default_str("vllm");
}

policies::Policy make_policy(policies::PolicyKind kind, const PolicyOptions& o) {
  policies::Policy p;
  p.kind = kind;
  p.packed = o.packed == "trtllm" ? policies::PackedVariant::trtllm : policies::PackedVariant::vllm;
  p.split_align = o.split_align;
  p.even_split = o.even_split == "sglang" ? policies::EvenSplitVariant::sglang : policies::EvenSplitVariant::vllm;
  if (p.packed == policies::PackedVariant::trtllm && o.split_align)
    throw InputError("--split-align: TensorRT-LLM's packing has no alignment; drop --split-align or use --packed vllm");
  return p;
}

namespace {

// The list with guided's cost files left out ("guided:c.json" is "guided"): what the variant options'
// check parses again, without reading the files again (a FIFO would wait for a second writer).
std::string without_guide_files(const std::string& list) {
  std::string out;
  for (size_t start = 0; start <= list.size();) {
    const size_t comma = std::min(list.find(',', start), list.size());
    std::string item = list.substr(start, comma - start);
    start = comma + 1;
    const size_t colon = item.find(':');
    std::string head = item.substr(0, colon);
    std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) { return std::tolower(c); });
    if (colon != std::string::npos && head.rfind("guided", 0) == 0) item = head;
    out += (out.empty() ? "" : ",") + item;
  }
  return out;
}

}  // namespace

std::vector<policies::Policy> make_policies(const PolicyOptions& o) {
  std::vector<policies::Policy> policies = policies::parse_policies(o.policy, make_policy(policies::PolicyKind::max, o));
  // The cost file of each guided:FILE is an input: no output of the command may be it.
  for (const policies::Policy& p : policies)
    if (!p.guide_path.empty()) outputs().claim_input(p.guide_path, fmt::format("the cost file of --policy {}", p.name()));
  // A variant option that changes no policy of the list is refused rather than dropped: the list is
  // planned again with the option's other value, and the same names mean it had no effect.
  const std::string names_only = without_guide_files(o.policy);
  auto names = [&](const PolicyOptions& changed) {
    std::vector<std::string> out;
    for (const policies::Policy& p : policies::parse_policies(names_only, make_policy(policies::PolicyKind::max, changed)))
      out.push_back(p.name());
    return out;
  };
  const std::vector<std::string> planned = names(o);
  auto refuse_if_idle = [&](bool given, PolicyOptions other, const std::string& option, const std::string& what) {
    if (given && names(other) == planned)
      throw InputError(fmt::format("{}: it sets {}, and --policy {} plans no such policy; drop {} or add that policy "
                                   "to --policy",
                                   option, what, o.policy, option.substr(0, option.find(' '))));
  };
  PolicyOptions other = o;
  other.packed = o.packed == "trtllm" ? "vllm" : "trtllm";
  other.split_align = 0;  // TensorRT-LLM's packing has no alignment
  refuse_if_idle(!o.packed.empty(), other, "--packed " + o.packed, "the variant of a plain `packed` policy");
  other = o;
  other.split_align = 0;
  refuse_if_idle(o.split_align != 0, other, fmt::format("--split-align {}", o.split_align),
                 "the split points of the packed (vllm) policy");
  other = o;
  other.even_split = o.even_split == "sglang" ? "vllm" : "sglang";
  refuse_if_idle(!o.even_split.empty(), other, "--even-split " + o.even_split, "the variant of a plain `even-split` policy");
  return policies;
}

void add_model_options(CLI::App& cmd, ModelOptions& o, bool list) {
  cmd.add_option("--model", o.models,
                 fmt::format("Model for the buffer's memory{}: {}", list ? " (a comma list)" : "", models::model_preset_names()))
      ->type_name(list ? "LIST" : "NAME");
  cmd.add_option("--model-config", o.config, "A Hugging Face config.json of any other MLA model, instead of --model")
      ->type_name("FILE");
  cmd.add_option("--tp", o.tps, list ? "Tensor-parallel degrees (a comma list); each GPU holds heads / TP" : "Tensor-parallel degree; each GPU holds heads / TP")
      ->type_name(list ? "LIST" : "N")
      ->default_str("1");
  cmd.add_option("--dtype", o.dtype, "Element type of the buffers")->transform(one_of({"bf16", "fp8"}))->default_str("bf16");
}

std::vector<models::ModelDims> make_models(const ModelOptions& o) {
  std::vector<models::ModelDims> models;
  if (!o.models.empty() && !o.config.empty())
    throw InputError("--model-config: give either --model or --model-config, not both");
  if (!o.config.empty()) models.push_back(models::read_model_config(o.config));
  size_t start = 0;
  while (!o.models.empty() && start <= o.models.size()) {
    const size_t comma = std::min(o.models.find(',', start), o.models.size());
    models.push_back(models::find_model_preset(o.models.substr(start, comma - start)));
    start = comma + 1;
  }
  return models;
}

std::vector<uint32_t> make_tps(const ModelOptions& o) { return bench::parse_sizes(o.tps, "--tp", 1024); }

std::optional<io::MemoryFigures> memory_figures(const ModelOptions& o, uint32_t rows) {
  const std::vector<models::ModelDims> models = make_models(o);
  if (models.empty()) {
    if (o.tps != "1" || o.dtype != "bf16") throw InputError("--tp/--dtype: they size a model's buffer; add --model (e.g. deepseek-v3)");
    return std::nullopt;
  }
  const std::vector<uint32_t> tps = make_tps(o);
  if (models.size() > 1 || tps.size() > 1) throw InputError("--model/--tp: run takes one model and one TP; sweep compares several");
  const models::Dtype dtype = models::parse_dtype(o.dtype);
  const models::BufferMemory m = models::buffer_memory(models[0], tps[0], dtype);
  return io::MemoryFigures{models[0].name, m.tp, models::to_string(dtype), m.kv_bytes_per_row,
                       m.kv_bytes(rows), m.k_bytes(rows), m.latent_bytes(rows)};
}

void add_cost_option(CLI::App& cmd, std::vector<std::string>& files, bool list) {
  cmd.add_option("--cost", files,
                 list ? "Predict each setting's step time with a cost model (JSON; costs/ has files calibrated on GPUs, "
                        "docs/cost-model.md): one per model and TP swept; without --model, the files' own"
                      : "Predict the plan's step time with a cost model (JSON; costs/ has files calibrated on GPUs, "
                        "docs/cost-model.md); without --model, the file's own")
      ->type_name("FILE");
}

void add_timing_option(CLI::App& cmd, std::string& timing) {
  cmd.add_option("--timing", timing,
                 "How --cost prices: graph (CUDA-graph replay, the host left out) or eager (as an engine runs the "
                 "loop without graphs, the host's dispatch included: the cost file's host section; docs/cost-model.md)")
      ->transform(one_of({"graph", "eager"}))
      ->default_str("graph");
}

bool eager_timing(const std::string& timing, bool with_cost, bool given) {
  if (timing == "eager" && !with_cost)
    throw InputError("--timing eager: it prices with a cost file's host section; add --cost FILE (one with a host section)");
  if (given && !with_cost)
    throw InputError(fmt::format("--timing {}: it sets how --cost prices, and no --cost file is given; add --cost FILE or "
                                 "drop --timing",
                                 timing));
  return timing == "eager";
}

std::vector<cost::CostModel> load_costs(const std::vector<std::string>& files) {
  std::vector<cost::CostModel> costs;
  for (const std::string& f : files) {
    outputs().claim_input(f, "the --cost file");
    costs.push_back(cost::read_cost_model(f));
  }
  return costs;
}

void resolve_cost_models(const std::vector<cost::CostModel>& costs, const ModelOptions& o, bool tp_given,
                         std::vector<models::ModelDims>& models, std::vector<uint32_t>& tps, const std::string& command, bool eager) {
  if (costs.empty()) return;
  sweeps::SweepGrid grid;
  grid.eager = eager;
  grid.models = models;
  grid.tps = tps;
  grid.dtype = models::parse_dtype(o.dtype);
  grid.costs = costs;
  sweeps::take_cost_models(grid, tp_given, command);
  models = grid.models;
  tps = grid.tps;
}

void add_workload_options(CLI::App& cmd, WorkloadOptions& o) {
  cmd.add_option("--workload", o.workload,
                 fmt::format("Request lengths from a preset fitted to published statistics (docs/workloads.md): {}",
                             workloads::workload_preset_names()))
      ->type_name("NAME");
  cmd.add_option("--lengths", o.lengths, "Request lengths from your own trace: a CSV with columns cached_tokens,new_tokens")
      ->type_name("FILE.csv");
  cmd.add_option("--replay", o.replay,
                 "Requests from a published trace, replayed through a prefix cache: Mooncake's JSONL (hash_ids of "
                 "blocks) or an Azure LLM inference CSV (docs/workloads.md)")
      ->type_name("FILE");
  cmd.add_option("--replay-format", o.replay_format, "With --replay: auto (from the file's first line), mooncake or azure")
      ->type_name("FORMAT")
      ->default_str("auto");
  cmd.add_option("--replay-block-size", o.replay_block_size, "With --replay: tokens per hash_ids block")
      ->type_name("TOKENS")
      ->default_str("512")
      ->transform(whole_number(1, 1u << 30));
  cmd.add_option("--prefix-cache-tokens", o.prefix_cache_tokens,
                 "With --replay: the prefix cache holds this many tokens (whole blocks), evicting the least recently "
                 "used block; default unlimited")
      ->type_name("N")
      ->transform(whole_number(1, uint64_t{1} << 48));
  cmd.add_flag("--arrivals", o.arrivals,
               "With --replay and --step-ms: a step takes only the requests that arrived by its start");
  // From a microsecond to an hour: a prefill step outside that is a typo (CLI11's PositiveNumber took
  // nan and hex, and printed a 309-digit bound).
  cmd.add_option("--step-ms", o.step_ms, "With --arrivals: how long a step lasts, in ms (a fixed time, until a cost model)")
      ->type_name("T")
      ->check(real_number(0.001, 3600000, "milliseconds"));
  cmd.add_option_function<uint64_t>(
         "--seed",
         [&o](const uint64_t& v) {
           o.seed = v;
           o.seed_given = true;
         },
         "Seed of the workload's draws and of the batch sizes")
      ->default_str("1")
      ->transform(whole_number(0, UINT64_MAX));
  cmd.add_option("--token-budget", o.token_budget,
                 "Form batches like a scheduler with this many new tokens per step (max_num_batched_tokens); a request "
                 "that does not fit prefills what fits and continues next step with that part cached")
      ->type_name("T")
      ->default_str("8192")
      ->transform(whole_number(1, 1u << 30));
  cmd.add_option("--max-sequences,--max-num-seqs", o.max_sequences,
                 "With --token-budget: at most S sequences per step (max_num_seqs; with --recommend it also sizes vLLM's "
                 "default buffer)")
      ->type_name("S")
      ->default_str("256")
      ->transform(whole_number(1, 1u << 24));
  cmd.add_option("--max-model-len", o.max_model_len,
                 "Drop requests longer than L tokens (cached + new), as an engine with this max_model_len refuses them")
      ->type_name("L")
      ->transform(whole_number(1, uint64_t{1} << 32));
  cmd.add_option("--batch-size", o.batch_size, "Instead of a token budget: batches of LO..HI whole requests (uniform), or of B")
      ->type_name("LO:HI")
      ->excludes(cmd.get_option("--token-budget"))  // the two ways of forming batches: one at a time
      ->excludes(cmd.get_option("--max-sequences"));
}

bool has_workload(const WorkloadOptions& o) { return !o.workload.empty() || !o.lengths.empty() || !o.replay.empty(); }

namespace {

// The replay's own options make sense only with --replay, and --arrivals only with --step-ms.
void require_replay_options(const WorkloadOptions& o) {
  if (o.replay.empty()) {
    const char* stray = o.replay_format != "auto"   ? "--replay-format"
                        : o.replay_block_size != 512 ? "--replay-block-size"
                        : o.prefix_cache_tokens      ? "--prefix-cache-tokens"
                        : o.arrivals                 ? "--arrivals"
                        : o.step_ms > 0              ? "--step-ms"
                                                     : nullptr;
    if (stray) throw InputError(fmt::format("{}: it sets how a trace is replayed; add --replay FILE or drop it", stray));
    return;
  }
  if (!o.workload.empty() || !o.lengths.empty())
    throw InputError(fmt::format("--replay: give one of --workload, --lengths or --replay, not {}",
                                 o.workload.empty() ? "--lengths too" : "--workload too"));
  if (o.arrivals != (o.step_ms > 0))
    throw InputError(o.arrivals ? "--arrivals: steps need a duration; add --step-ms T (ms per step)"
                                : "--step-ms: it times the steps of --arrivals; add --arrivals or drop it");
}

}  // namespace

std::string replay_summary(const workloads::RequestSource& source) {
  const auto* replay = dynamic_cast<const replay::ReplaySource*>(&source);
  return replay ? replay->stats().describe() : std::string();
}

std::unique_ptr<workloads::RequestSource> make_source(const WorkloadOptions& o) {
  require_replay_options(o);
  if (!o.workload.empty() && !o.lengths.empty()) throw InputError("--lengths: give either --workload or --lengths, not both");
  std::unique_ptr<workloads::RequestSource> source;
  if (!o.replay.empty()) {
    replay::ReplayOptions r;
    r.block_size = o.replay_block_size;
    r.cache_tokens = o.prefix_cache_tokens;
    r.step_ms = o.arrivals ? o.step_ms : 0;
    r.max_model_len = o.max_model_len;
    if (r.cache_tokens && r.cache_tokens < r.block_size)
      throw InputError(fmt::format("--prefix-cache-tokens {}: less than one block of {} tokens; give at least {}",
                                   r.cache_tokens, r.block_size, r.block_size));
    // max_model_len is the replay's own (a request is dropped before it meets the cache).
    return std::make_unique<replay::ReplaySource>(
        std::make_unique<replay::TraceReader>(o.replay, replay::parse_trace_format(o.replay_format), r.block_size), r);
  }
  if (!o.lengths.empty()) {
    source = workloads::list_source(workloads::read_lengths_csv(o.lengths), o.lengths);
  } else if (!o.workload.empty()) {
    source = workloads::preset_source(workloads::find_workload_preset(o.workload), o.seed);
  } else {
    throw InputError(fmt::format("--workload: no requests to form batches from; add --workload NAME ({}), --lengths "
                                 "FILE.csv or --replay TRACE",
                                 workloads::workload_preset_names()));
  }
  return o.max_model_len ? workloads::capped_source(std::move(source), o.max_model_len) : std::move(source);
}

workloads::BatchFormation make_formation(const WorkloadOptions& o) {
  if (o.seed_given && o.workload.empty() && o.batch_size.empty())
    throw InputError("--seed: it draws a --workload's requests and --batch-size's sizes, and a --lengths or --replay "
                     "trace formed by --token-budget uses neither; drop --seed");
  workloads::BatchFormation f;
  f.token_budget = o.token_budget;
  f.max_sequences = o.max_sequences;
  if (!o.batch_size.empty()) {
    f.mode = workloads::BatchFormation::Mode::batch_size;
    const size_t colon = o.batch_size.find(':');
    const std::string lo = o.batch_size.substr(0, colon), hi = colon == std::string::npos ? lo : o.batch_size.substr(colon + 1);
    const std::vector<uint32_t> a = bench::parse_sizes(lo, "--batch-size", 1u << 24), b = bench::parse_sizes(hi, "--batch-size", 1u << 24);
    if (a.size() != 1 || b.size() != 1 || b[0] < a[0])
      throw InputError(fmt::format("--batch-size {}: write LO:HI with 1 <= LO <= HI, e.g. 1:32, or one size", o.batch_size));
    f.min_batch = a[0];
    f.max_batch = b[0];
  }
  return f;
}

}  // namespace mlaplan::cli
