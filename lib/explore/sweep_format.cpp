#include "mlaplan/explore/sweep_format.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "mlaplan/io/printable.hpp"
#include "mlaplan/profile/json_text.hpp"

namespace mlaplan::explore {

namespace {

struct Column {
  const char* title;
  bool right;  // numbers are right-aligned
};

// The cells of one row, in the order of columns().
std::vector<std::string> cells(const SweepRow& r, bool with_model) {
  std::vector<std::string> c{r.policy.name(),
                             fmt::format("{}", r.buffer_tokens),
                             r.max_chunks ? fmt::format("{}", *r.max_chunks) : "-",
                             fmt::format("{:.2f}", r.mean_iterations),
                             fmt::format("{}", r.p50),
                             fmt::format("{}", r.p90),
                             fmt::format("{}", r.p99),
                             fmt::format("{}", r.max_iterations),
                             fmt::format("{:.2f}%", 100.0 * r.refused_share()),
                             fmt::format("{:.2f}%", 100.0 * r.padding_overhead),
                             fmt::format("{:.1f}%", 100.0 * r.mean_fill)};
  if (with_model) {
    c.push_back(io::printable(r.model->name));  // a --model-config's name is the user's text
    c.push_back(fmt::format("{}", r.memory->tp));
    c.push_back(io::format_bytes(r.memory->kv_bytes(r.buffer_tokens)));
    c.push_back(io::format_bytes(r.memory->k_bytes(r.buffer_tokens)));
  }
  return c;
}

std::vector<Column> columns(bool with_model) {
  std::vector<Column> c{{"policy", false}, {"buffer", true},  {"M", true},       {"mean", true},
                        {"p50", true},     {"p90", true},     {"p99", true},     {"max", true},
                        {"refused", true}, {"padding", true}, {"fill", true}};
  if (with_model) {
    c.push_back({"model", false});
    c.push_back({"TP", true});
    c.push_back({"buffer mem", true});
    c.push_back({"K concat", true});
  }
  return c;
}

bool has_model(const SweepResult& s) { return !s.rows.empty() && s.rows.front().model.has_value(); }

std::string header(const SweepResult& s) {
  return fmt::format("batches: {} from {}, {}; {:.1f} sequences per batch on average\n"
                     "iterations per batch (mean, quantiles, max); max planned by {}; evaluated in {:.2f} s\n",
                     s.batches, io::printable(s.source), io::printable(s.formation), s.mean_batch_size, s.max_planner, s.seconds);
}

std::string recommendation_text(const SweepReport& rep, const char* bullet, const char* indent) {
  if (!rep.recommend_options) return "";
  const RecommendOptions& o = *rep.recommend_options;
  std::string out = fmt::format("\nrecommendation: the smallest buffer with at most {} iteration{} at {}{}\n",
                                o.max_iterations, o.max_iterations == 1 ? "" : "s", quantile_name(o.quantile),
                                o.memory_budget ? fmt::format(", buffer + K concat within {}", io::format_bytes(*o.memory_budget)) : "");
  for (const Recommendation& r : rep.recommendations) {
    if (r.row) {
      const SweepRow& row = rep.sweep->rows[*r.row];
      std::string mem;
      if (row.memory)
        mem = fmt::format(", buffer {} + K concat {}", io::format_bytes(row.memory->kv_bytes(row.buffer_tokens)),
                          io::format_bytes(row.memory->k_bytes(row.buffer_tokens)));
      out += fmt::format("{}{}: buffer_token_size {} ({} {} iterations, mean {:.2f}{})\n", bullet, io::printable(r.group),
                         row.buffer_tokens, quantile_name(o.quantile), row.iterations_at(o.quantile),
                         row.mean_iterations, mem);
    } else {
      out += fmt::format("{}{}: no buffer in the sweep qualifies; sweep larger --buffer-tokens{}\n", bullet, io::printable(r.group),
                         o.memory_budget ? " or raise --memory-budget / --tp" : "");
    }
    for (const Rejection& x : r.rejected) out += fmt::format("{}{}: {}\n", indent, x.buffer_tokens, x.why);
  }
  return out;
}

}  // namespace

SweepCells sweep_cells(const SweepReport& rep) {
  SweepCells out;
  const bool with_model = has_model(*rep.sweep);
  for (const Column& c : columns(with_model)) {
    out.titles.emplace_back(c.title);
    out.numeric.push_back(c.right);
  }
  for (const SweepRow& r : rep.sweep->rows) out.rows.push_back(cells(r, with_model));
  return out;
}

std::string sweep_summary(const SweepResult& sweep) { return header(sweep); }

std::string sweep_recommendation(const SweepReport& report) { return recommendation_text(report, "  ", "      "); }

std::string format_sweep_table(const SweepReport& rep) {
  const SweepResult& s = *rep.sweep;
  const bool with_model = has_model(s);
  const std::vector<Column> cols = columns(with_model);
  std::vector<std::vector<std::string>> body;
  for (const SweepRow& r : s.rows) body.push_back(cells(r, with_model));
  std::vector<size_t> width(cols.size());
  for (size_t i = 0; i < cols.size(); ++i) {
    width[i] = std::string(cols[i].title).size();
    for (const auto& row : body) width[i] = std::max(width[i], row[i].size());
  }
  auto line = [&](const std::vector<std::string>& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i)
      out += fmt::format(cols[i].right ? "{}{:>{}}" : "{}{:<{}}", i ? "  " : "", v[i], width[i]);
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::vector<std::string> titles;
  for (const Column& c : cols) titles.push_back(c.title);
  std::string out = header(s) + "\n" + line(titles);
  for (const auto& row : body) out += line(row);
  return out + recommendation_text(rep, "  ", "      ");
}

std::string format_sweep_markdown(const SweepReport& rep) {
  const SweepResult& s = *rep.sweep;
  const bool with_model = has_model(s);
  const std::vector<Column> cols = columns(with_model);
  std::string out = header(s) + "\n|";
  for (const Column& c : cols) out += fmt::format(" {} |", c.title);
  out += "\n|";
  for (const Column& c : cols) out += c.right ? " ---: |" : " --- |";
  out += "\n";
  for (const SweepRow& r : s.rows) {
    out += "|";
    for (const std::string& cell : cells(r, with_model)) out += fmt::format(" {} |", cell);
    out += "\n";
  }
  return out + recommendation_text(rep, "- ", "  - buffer ");
}

std::string format_sweep_csv(const SweepReport& rep) {
  std::string out =
      "policy,buffer_tokens,max_chunks,batches,mean_iterations,p50,p90,p99,max_iterations,refused_share,"
      "padding_overhead,mean_fill,model,tp,dtype_bytes,buffer_bytes,k_concat_bytes,recommended\n";
  std::vector<bool> chosen(rep.sweep->rows.size(), false);
  for (const Recommendation& r : rep.recommendations)
    if (r.row) chosen[*r.row] = true;
  for (size_t i = 0; i < rep.sweep->rows.size(); ++i) {
    const SweepRow& r = rep.sweep->rows[i];
    out += fmt::format("{},{},{},{},{:.4f},{},{},{},{},{:.6f},{:.6f},{:.6f},", r.policy.name(), r.buffer_tokens,
                       r.max_chunks ? fmt::format("{}", *r.max_chunks) : "", r.batches, r.mean_iterations, r.p50,
                       r.p90, r.p99, r.max_iterations, r.refused_share(), r.padding_overhead, r.mean_fill);
    if (r.model)
      out += fmt::format("{},{},{},{},{},", r.model->name, r.memory->tp, r.memory->dtype_bytes,
                         r.memory->kv_bytes(r.buffer_tokens), r.memory->k_bytes(r.buffer_tokens));
    else
      out += ",,,,,";
    out += chosen[i] ? "1\n" : "0\n";
  }
  return out;
}

std::string format_sweep_json(const SweepReport& rep) {
  using json = nlohmann::ordered_json;
  const SweepResult& s = *rep.sweep;
  json j;
  j["source"] = s.source;
  j["formation"] = s.formation;
  j["batches"] = s.batches;
  j["mean_batch_size"] = s.mean_batch_size;
  j["max_planner"] = s.max_planner;
  j["seconds"] = s.seconds;
  j["rows"] = json::array();
  for (const SweepRow& r : s.rows) {
    json row;
    row["policy"] = r.policy.name();
    row["buffer_tokens"] = r.buffer_tokens;
    row["max_chunks"] = r.max_chunks ? json(*r.max_chunks) : json(nullptr);
    row["iterations"] = {{"mean", r.mean_iterations}, {"p50", r.p50}, {"p90", r.p90}, {"p99", r.p99}, {"max", r.max_iterations}};
    row["refused"] = r.refused;
    row["refused_share"] = r.refused_share();
    if (!r.first_refusal.empty()) row["first_refusal"] = r.first_refusal;
    row["padding_overhead"] = r.padding_overhead;
    row["mean_fill"] = r.mean_fill;
    if (r.model) {
      row["model"] = r.model->name;
      row["tp"] = r.memory->tp;
      row["dtype_bytes"] = r.memory->dtype_bytes;
      row["buffer_bytes"] = r.memory->kv_bytes(r.buffer_tokens);
      row["k_concat_bytes"] = r.memory->k_bytes(r.buffer_tokens);
    }
    j["rows"].push_back(row);
  }
  if (rep.recommend_options) {
    const RecommendOptions& o = *rep.recommend_options;
    json rec;
    rec["max_iterations"] = o.max_iterations;
    rec["quantile"] = o.quantile;
    rec["memory_budget_bytes"] = o.memory_budget ? json(*o.memory_budget) : json(nullptr);
    rec["groups"] = json::array();
    for (const Recommendation& r : rep.recommendations) {
      json g;
      g["group"] = r.group;
      g["buffer_tokens"] = r.row ? json(s.rows[*r.row].buffer_tokens) : json(nullptr);
      g["row"] = r.row ? json(*r.row) : json(nullptr);
      g["rejected"] = json::array();
      for (const Rejection& x : r.rejected) g["rejected"].push_back({{"buffer_tokens", x.buffer_tokens}, {"why", x.why}});
      rec["groups"].push_back(g);
    }
    j["recommendation"] = rec;
  }
  return profile::json_text(j, 2) + "\n";
}

}  // namespace mlaplan::explore
