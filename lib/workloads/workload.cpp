#include "mlaplan/workloads/workload.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "mlaplan/models/preset_lookup.hpp"

namespace mlaplan::workloads {

const char* to_string(SplitModel m) {
  switch (m) {
    case SplitModel::all_new: return "all-new";
    case SplitModel::block_share: return "block-share";
    case SplitModel::independent: return "independent";
    case SplitModel::chat_turns: return "chat-turns";
  }
  return "?";
}

namespace {

const QuantileDistribution& need(const std::optional<QuantileDistribution>& d, const char* what,
                                 const WorkloadPreset& preset) {
  if (!d) throw std::logic_error(fmt::format("workload preset {}: {} model without a {} distribution", preset.name,
                                             to_string(preset.split), what));
  return *d;
}

uint64_t max_sample(const QuantileDistribution& d) { return static_cast<uint64_t>(std::llround(d.max())); }

}  // namespace

Request WorkloadPreset::draw(std::mt19937_64& rng) const {
  Request r;
  switch (split) {
    case SplitModel::all_new:
      r.new_tokens = need(input, "input", *this).sample(rng);
      break;
    case SplitModel::block_share: {
      const uint32_t total = need(input, "input", *this).sample(rng);
      const uint64_t blocks = static_cast<uint64_t>(std::floor(cached_share * total / block_tokens));
      uint64_t cached_tokens = blocks * block_tokens;
      if (cached_tokens >= total) cached_tokens = (total - 1) / block_tokens * uint64_t{block_tokens};  // new >= 1
      r.cached_tokens = static_cast<uint32_t>(cached_tokens);
      r.new_tokens = static_cast<uint32_t>(total - cached_tokens);
      break;
    }
    case SplitModel::independent:
      r.cached_tokens = need(cached, "cached", *this).sample(rng);
      r.new_tokens = need(new_tokens, "new_tokens", *this).sample(rng);
      break;
    case SplitModel::chat_turns: {
      const QuantileDistribution& prompt = need(new_tokens, "new_tokens", *this);
      r.new_tokens = prompt.sample(rng);
      if (uniform01(rng) < follow_up_share) {
        const uint64_t history = uint64_t{prompt.sample(rng)} + need(response, "response", *this).sample(rng);
        r.cached_tokens = static_cast<uint32_t>(history);  // < 2^32: both are < 2^31
      }
      break;
    }
  }
  return r;
}

uint64_t WorkloadPreset::max_total_tokens() const {
  switch (split) {
    case SplitModel::all_new:
    case SplitModel::block_share: return max_sample(need(input, "input", *this));
    case SplitModel::independent:
      return max_sample(need(cached, "cached", *this)) + max_sample(need(new_tokens, "new_tokens", *this));
    case SplitModel::chat_turns: {
      const uint64_t prompt = max_sample(need(new_tokens, "new_tokens", *this));
      return 2 * prompt + (follow_up_share > 0 ? max_sample(need(response, "response", *this)) : 0);
    }
  }
  return 0;
}

namespace {

using Points = std::vector<std::pair<double, double>>;

// Quantile points computed from a public trace file with numpy.percentile (linear interpolation),
// at p = 0, .01, .05, .10, .25, .50, .75, .90, .95, .99, 1 (min and max are the trace's).
Points trace_points(const std::vector<double>& values) {
  static const double ps[] = {0, 0.01, 0.05, 0.10, 0.25, 0.50, 0.75, 0.90, 0.95, 0.99, 1};
  Points points;
  for (size_t i = 0; i < values.size(); ++i) points.emplace_back(ps[i], values[i]);
  return points;
}

std::vector<QuantileClaim> claims(const char* what, const Points& pv) {
  std::vector<QuantileClaim> out;
  for (const auto& [p, v] : pv) out.push_back({what, p, v});
  return out;
}

std::vector<QuantileClaim> operator+(std::vector<QuantileClaim> a, const std::vector<QuantileClaim>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A preset drawn from the input lengths of a public trace (`values` at trace_points' p), claiming
// their p50, p90, p99 and mean; all new unless the caller splits the input.
WorkloadPreset from_trace(const char* name, const char* description, std::string source,
                          const std::vector<double>& values, double mean) {
  WorkloadPreset w;
  w.name = name;
  w.description = description;
  w.source = std::move(source);
  w.claims = claims("input", {{0.5, values[5]}, {0.9, values[7]}, {0.99, values[9]}});
  w.means = {{"input", mean}};
  w.split = SplitModel::all_new;
  w.input.emplace(trace_points(values));
  return w;
}

WorkloadPreset azure(const char* name, const char* kind, const char* description, const std::vector<double>& values,
                     double mean) {
  return from_trace(
      name, description,
      fmt::format(
          "Azure LLM inference trace 2023 ({0}): data/AzureLLMInferenceTrace_{0}.csv, ContextTokens, in "
          "https://github.com/Azure/AzurePublicDataset (AzureLLMInferenceDataset2023.md); Patel et al., \"Splitwise: "
          "Efficient generative LLM inference using phase splitting\", ISCA 2024. Percentiles computed from the CSV.",
          kind),
      values, mean);
}

WorkloadPreset mooncake(const char* name, const char* file, const char* description, const std::vector<double>& values,
                        double mean, double cache_ratio) {
  WorkloadPreset w = from_trace(
      name, description,
      fmt::format("Mooncake FAST'25 trace release: FAST25-release/traces/{}, input_length, in "
                  "https://github.com/kvcache-ai/Mooncake (FAST25-release/README.md: request count and average input); "
                  "Qin et al., \"Mooncake: Trading More Storage for Less Computation\", FAST 2025, Table 2 (cache "
                  "ratio {:.0f}%). Percentiles computed from the trace.",
                  file, cache_ratio * 100),
      values, mean);
  w.split = SplitModel::block_share;
  w.cached_share = cache_ratio;
  w.block_tokens = 512;  // the traces' hash_ids blocks
  return w;
}

// The lengths of one side of a TraceLab coding-agent step (the cached prefix, or the new tokens).
struct AgentLengths {
  Points published;  // p25, p50, p90 and p99 as TraceLab lists them: the preset's claims
  double mean;
  Points more;  // the CDF's other points: its ends and, for the prefix, prefix_bins()

  // The CDF through both sets of points, in order of p.
  Points cdf() const {
    Points all = more;
    all.insert(all.end(), published.begin(), published.end());
    std::sort(all.begin(), all.end());
    return all;
  }
};

// The prefix CDF that TraceLab's steps per prefix bin give: the bins are <1k, 1-2k, 2-4k, ...,
// 128-256k (units of 1,024 tokens) and >256k, each with its share of the steps at its upper edge.
// An empty bin adds no point (p must rise); the last one ends at the longest prefix, `max`.
Points prefix_bins(const std::vector<double>& steps, double max) {
  double total = 0;
  for (double n : steps) total += n;
  Points points{{0, 1}};
  double below = 0, edge = 1024;
  for (size_t i = 0; i + 1 < steps.size(); ++i, edge *= 2) {
    below += steps[i];
    if (steps[i] > 0) points.emplace_back(below / total, edge);
  }
  points.emplace_back(1, max);
  return points;
}

// "116K" for 115,584, "886" for 886: a length as the descriptions round it.
std::string rounded(double tokens) {
  return tokens < 1000 ? fmt::format("{}", tokens) : fmt::format("{:.0f}K", tokens / 1000);
}

// A TraceLab coding-agent preset: the cached prefix and the new tokens of a step drawn independently.
// The description quotes the published p50 and p99 (published[1] and [3]).
WorkloadPreset coding_agent(const char* name, const char* agent, std::string source, const AgentLengths& cached,
                            const AgentLengths& new_tokens) {
  WorkloadPreset w;
  w.name = name;
  w.description = fmt::format(
      "{} coding-agent steps: a huge cached prefix (p50 {}, p99 {}) and about 1K new tokens per step (p50 {}, p99 {}), "
      "drawn independently",
      agent, rounded(cached.published[1].second), rounded(cached.published[3].second),
      rounded(new_tokens.published[1].second), rounded(new_tokens.published[3].second));
  w.source = std::move(source);
  w.claims = claims("cached", cached.published) + claims("new", new_tokens.published);
  w.means = {{"cached", cached.mean}, {"new", new_tokens.mean}};
  w.split = SplitModel::independent;
  w.cached.emplace(cached.cdf());
  w.new_tokens.emplace(new_tokens.cdf());
  return w;
}

std::vector<WorkloadPreset> make_presets() {
  std::vector<WorkloadPreset> presets;

  presets.push_back(azure("azure-code", "code",
                          "Azure 2023 coding service: prompts of 1-7K tokens (p50 1,469), all new; cached context only "
                          "from chunked prefill of long prompts",
                          {3, 17, 75, 147, 578, 1469, 2744.5, 5187.6, 7303.3, 7436, 7437}, 2047.8));
  presets.push_back(azure("azure-conv", "conv",
                          "Azure 2023 conversation service: prompts around 1K tokens (p50 1,020, max 14,050), all new; "
                          "cached context only from chunked prefill of long prompts",
                          {2, 29, 181, 207, 396, 1020, 1189, 2734.5, 4083, 4142, 14050}, 1154.7));

  presets.push_back(mooncake("mooncake-conv", "conversation_trace.jsonl",
                             "Kimi (Mooncake FAST'25) conversation: long inputs (p50 6.9K, p99 85K), 40% of each input "
                             "a cached prefix in whole 512-token blocks",
                             {891, 894, 901, 964, 2306.5, 6909, 15367, 27367, 39550.5, 85400.4, 126195}, 12035, 0.40));
  presets.push_back(mooncake("mooncake-synthetic", "synthetic_trace.jsonl",
                             "Mooncake FAST'25 synthetic (ShareGPT, L-Eval, LooGLE): bimodal inputs (p25 277, p50 "
                             "11.6K, max 191K), 66% of each input a cached prefix in whole 512-token blocks",
                             {13, 16, 22, 30, 277, 11587, 23175, 38611.2, 48904.6, 66456.16, 191378}, 15325, 0.66));

  const std::string tracelab =
      "TraceLab (UW SyFI), public Claude Code / Codex coding-agent traces, per agent step: "
      "https://tracelab.cs.washington.edu/exp/llm_generation/token_length_distribution/ (prefix and append tokens: avg, "
      "p25, p50, p90, p99) and https://tracelab.cs.washington.edu/exp/llm_generation/append_by_prefix_bin/ (steps per "
      "prefix bin); https://github.com/uw-syfi/TraceLab";
  // Codex: 216,823 steps (217,635 in the steps per prefix bin). Claude Code: 140,338 steps. A row:
  // name, agent, source; the cached prefix {published, mean, steps per prefix bin}; the new tokens
  // {published, mean, the CDF's other points}.
  presets.push_back(coding_agent("coding-agent", "Codex", tracelab + " (Codex rows)",
                                 {{{0.25, 67456}, {0.5, 115584}, {0.9, 201600}, {0.99, 231040}}, 116623,
                                  prefix_bins({626, 902, 2108, 3501, 5503, 10470, 29925, 72996, 91598, 6}, 272000)},
                                 {{{0.25, 406}, {0.5, 886}, {0.9, 8310}, {0.99, 121009}}, 5283,
                                  {{0, 1}, {0.97, 17238}, {1, 272000}}}));
  presets.push_back(coding_agent("coding-agent-claude", "Claude Code", tracelab + " (Claude rows)",
                                 {{{0.25, 59949}, {0.5, 126180}, {0.9, 467082}, {0.99, 918111}}, 194361,
                                  prefix_bins({2937, 0, 2, 530, 4034, 10248, 20919, 33571, 34840, 33257}, 1000000)},
                                 {{{0.25, 384}, {0.5, 857}, {0.9, 5342}, {0.99, 232206}}, 8479,
                                  {{0, 1}, {0.97, 12233}, {1, 1000000}}}));
  {
    WorkloadPreset w;
    w.name = "short-chat";
    w.description =
        "Short multi-turn chat (ShareGPT lengths): prompts p50 74 tokens; half the requests follow up a conversation "
        "with one earlier prompt and response cached";
    w.source =
        "ShareGPT prompt and response lengths: Sun et al., \"Llumnix: Dynamic Scheduling for Large Language Model "
        "Serving\", OSDI 2024, https://arxiv.org/abs/2406.03243, Table 2: input mean 306, p50 74, p99 3,388; output mean 500, p50 487, "
        "p99 1,234. Turns: Zheng et al., \"LMSYS-Chat-1M: A Large-Scale Real-World LLM Conversation Dataset\", ICLR "
        "2024, https://arxiv.org/abs/2309.11998, Table 1: 2.0 turns per conversation";
    w.claims = claims("new", {{0.5, 74}, {0.99, 3388}});
    w.means = {{"new", 306}, {"response", 500}};
    w.split = SplitModel::chat_turns;
    w.new_tokens.emplace(Points{{0, 4}, {0.5, 74}, {0.9, 437}, {0.99, 3388}, {1, 16384}});
    w.response.emplace(Points{{0, 1}, {0.1, 76}, {0.5, 487}, {0.99, 1234}, {1, 2048}});
    w.follow_up_share = 1 - 1 / 2.0;  // 2.0 turns per conversation: every other request is a follow-up
    presets.push_back(std::move(w));
  }
  return presets;
}

}  // namespace

const std::vector<WorkloadPreset>& workload_presets() {
  static const std::vector<WorkloadPreset> presets = make_presets();
  return presets;
}

std::string workload_preset_names() { return models::preset_names(workload_presets()); }

const WorkloadPreset& find_workload_preset(const std::string& name) {
  return models::find_preset(workload_presets(), name, "--workload", "workload", "--lengths FILE.csv");
}

std::vector<Request> draw_requests(const WorkloadPreset& preset, size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Request> requests;
  requests.reserve(count);
  for (size_t i = 0; i < count; ++i) requests.push_back(preset.draw(rng));
  return requests;
}

}  // namespace mlaplan::workloads
