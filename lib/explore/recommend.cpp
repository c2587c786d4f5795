#include "mlaplan/explore/recommend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>

#include "mlaplan/errors.hpp"

namespace mlaplan::explore {

namespace {

std::string group_of(const SweepRow& r) {
  std::string g = r.policy.name();
  if (r.max_chunks) g += fmt::format(" M={}", *r.max_chunks);
  if (r.model) g += fmt::format(" {} TP{}", r.model->name, r.memory->tp);
  return g;
}

// Why `r` fails, or "" when it qualifies.
std::string failure(const SweepRow& r, const RecommendOptions& o) {
  std::vector<std::string> why;
  const uint32_t at_q = r.iterations_at(o.quantile);
  const std::string q = quantile_name(o.quantile);
  if (at_q == std::numeric_limits<uint32_t>::max()) {
    why.push_back(fmt::format("{} of {} batches refused ({:.2f}%), more than {} allows; the first: {}", r.refused,
                              r.batches, 100.0 * r.refused_share(), q, r.first_refusal));
  } else if (at_q > o.max_iterations) {
    why.push_back(fmt::format("{} needs {} iterations > {}", q, at_q, o.max_iterations));
  }
  if (o.memory_budget && r.memory) {
    const uint64_t bytes = r.memory->total_bytes(r.buffer_tokens);
    if (bytes > *o.memory_budget)
      why.push_back(fmt::format("memory {} (buffer {} + K concat {}) > budget {}", format_bytes(bytes),
                                format_bytes(r.memory->kv_bytes(r.buffer_tokens)),
                                format_bytes(r.memory->k_bytes(r.buffer_tokens)), format_bytes(*o.memory_budget)));
  }
  std::string joined;
  for (const std::string& w : why) joined += (joined.empty() ? "" : "; ") + w;
  return joined;
}

}  // namespace

std::vector<Recommendation> recommend(const SweepResult& sweep, const RecommendOptions& options) {
  if (options.memory_budget && !sweep.rows.empty() && !sweep.rows.front().model)
    throw InputError("--memory-budget: the buffer's memory needs a model; add --model (e.g. deepseek-v3) or --model-config");
  std::vector<Recommendation> out;
  std::map<std::string, size_t> index;  // group -> position in `out`, in first-seen order
  std::vector<std::vector<size_t>> members;
  for (size_t i = 0; i < sweep.rows.size(); ++i) {
    const std::string g = group_of(sweep.rows[i]);
    auto [it, fresh] = index.emplace(g, out.size());
    if (fresh) {
      out.push_back({g, std::nullopt, {}});
      members.emplace_back();
    }
    members[it->second].push_back(i);
  }
  for (size_t g = 0; g < out.size(); ++g) {
    std::vector<size_t>& rows = members[g];
    std::stable_sort(rows.begin(), rows.end(),
                     [&](size_t a, size_t b) { return sweep.rows[a].buffer_tokens < sweep.rows[b].buffer_tokens; });
    for (size_t i : rows) {
      const std::string why = failure(sweep.rows[i], options);
      if (why.empty()) {
        out[g].row = i;
        break;
      }
      out[g].rejected.push_back({sweep.rows[i].buffer_tokens, why});
    }
  }
  return out;
}

double parse_quantile(const std::string& text) {
  std::string t = text;
  if (t == "max") return 1.0;
  if (!t.empty() && (t[0] == 'p' || t[0] == 'P')) t = t.substr(1);
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(t, &used);
  } catch (...) {
    used = 0;
  }
  if (t.empty() || used != t.size() || !(v > 0 && v <= 100))
    throw InputError(fmt::format("--quantile {}: not a quantile; write p50, p90, p99, p99.9 or max", text));
  return v / 100.0;
}

std::string quantile_name(double q) {
  if (q >= 1.0) return "max";
  return fmt::format("p{:g}", q * 100.0);
}

uint64_t parse_byte_size(const std::string& text, const std::string& option) {
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(text, &used);
  } catch (...) {
    used = 0;
  }
  std::string unit = text.substr(used);
  unit.erase(std::remove_if(unit.begin(), unit.end(), [](unsigned char c) { return std::isspace(c); }), unit.end());
  static const std::pair<const char*, double> units[] = {
      {"", 1},          {"B", 1},          {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
      {"TiB", 1099511627776.0}, {"KB", 1e3}, {"MB", 1e6},    {"GB", 1e9},         {"TB", 1e12}};
  for (const auto& [name, scale] : units) {
    if (used > 0 && v > 0 && unit == name && v * scale < 1.8e19) return static_cast<uint64_t>(std::llround(v * scale));
  }
  throw InputError(fmt::format("{} {}: not a size; write e.g. 8GiB, 512MiB or 2GB", option, text));
}

}  // namespace mlaplan::explore
