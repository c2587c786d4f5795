#include "mlaplan/explore/sweep_format.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "mlaplan/io/printable.hpp"
#include "mlaplan/io/table_builder.hpp"
#include "mlaplan/profile/json_text.hpp"

namespace mlaplan::explore {

namespace {

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

bool has_model(const SweepResult& s) { return !s.rows.empty() && s.rows.front().model.has_value(); }

// The rows as one table (names to the left, numbers to the right), for every format that has one.
io::TableBuilder table_of(const SweepResult& s) {
  using io::Align;
  const bool with_model = has_model(s);
  std::vector<io::TableColumn> c{{"policy", Align::left},   {"buffer", Align::right}, {"M", Align::right},
                                 {"mean", Align::right},    {"p50", Align::right},    {"p90", Align::right},
                                 {"p99", Align::right},     {"max", Align::right},    {"refused", Align::right},
                                 {"padding", Align::right}, {"fill", Align::right}};
  if (with_model) {
    c.push_back({"model", Align::left});
    c.push_back({"TP", Align::right});
    c.push_back({"buffer mem", Align::right});
    c.push_back({"K concat", Align::right});
  }
  io::TableBuilder t(std::move(c));
  for (const SweepRow& r : s.rows) t.add_row(cells(r, with_model));
  return t;
}

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
  const io::TableBuilder t = table_of(*rep.sweep);
  SweepCells out;
  for (const io::TableColumn& c : t.columns()) {
    out.titles.push_back(c.title);
    out.numeric.push_back(c.align == io::Align::right);
  }
  out.rows = t.rows();
  return out;
}

std::string sweep_summary(const SweepResult& sweep) { return header(sweep); }

std::string sweep_recommendation(const SweepReport& report) { return recommendation_text(report, "  ", "      "); }

std::string format_sweep_table(const SweepReport& rep) {
  return header(*rep.sweep) + "\n" + table_of(*rep.sweep).aligned() + recommendation_text(rep, "  ", "      ");
}

std::string format_sweep_markdown(const SweepReport& rep) {
  return header(*rep.sweep) + "\n" + table_of(*rep.sweep).markdown() + recommendation_text(rep, "- ", "  - buffer ");
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
