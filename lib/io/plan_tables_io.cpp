#include "mlaplan/io/plan_tables_io.hpp"

#include <fmt/format.h>

#include <iterator>
#include <nlohmann/json.hpp>

#include "mlaplan/errors.hpp"
#include "mlaplan/io/input_file.hpp"
#include "mlaplan/io/json_error.hpp"

namespace mlaplan::io {

using json = nlohmann::json;

namespace {

constexpr const char* kTableKeys[] = {"buffer_row_offsets", "cache_offsets", "buffer_lengths"};
// What run --format json writes that is no fact of the plan (how and where it was made, and run's own
// verdict): accepted, so run's output checks as is, and not compared.
constexpr const char* kMetadataKeys[] = {"backend", "planner",      "device",    "buffer_memory",
                                         "predicted_time", "merges_per_query", "verification", "timings_us"};
constexpr const char* kFactKeys[] = {"min_max_chunks", "chunks_used", "padded_tokens", "input_tokens",
                                     "batch_size", "page_size", "buffer_token_size", "max_chunks"};

bool one_of(const std::string& key, const char* const* list, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (key == list[i]) return true;
  return false;
}

// Reads one table's cells, checking only that they are integers in lists; the shape is checked once
// the scenario is known (shape_plan_tables).
RawTable read_raw_table(const json& t, const std::string& path, const std::string& prefix, const char* key, bool matrix,
                        int64_t lo, int64_t hi) {
  auto not_integers = [&](const std::string& where) {
    return InputError(fmt::format("{}: {}{}: expected {} of integers", path, prefix, where, matrix ? "a list of lists" : "a list"));
  };
  if (!t.is_array()) throw not_integers(key);
  RawTable raw;
  raw.matrix = matrix;
  auto take = [&](const json& v, const std::string& where) {
    if (!v.is_number_integer()) throw not_integers(where);
    const bool in_range = v.is_number_unsigned() ? v.get<uint64_t>() <= static_cast<uint64_t>(hi)
                                                 : v.get<int64_t>() >= lo && v.get<int64_t>() <= hi;
    if (!in_range && !raw.first_out_of_range) {
      raw.first_out_of_range = raw.cells.size();
      raw.out_of_range_value = v.dump();
    }
    raw.cells.push_back(in_range ? v.get<int64_t>() : 0);
  };
  if (!matrix) {
    raw.cells.reserve(t.size());
    for (size_t r = 0; r < t.size(); ++r) take(t[r], fmt::format("{}[{}]", key, r));
    return raw;
  }
  raw.row_sizes.reserve(t.size());
  for (size_t r = 0; r < t.size(); ++r) {
    const json& row = t[r];
    if (!row.is_array()) throw not_integers(fmt::format("{}[{}]", key, r));
    raw.row_sizes.push_back(row.size());
    for (size_t c = 0; c < row.size(); ++c) take(row[c], fmt::format("{}[{}][{}]", key, r, c));
  }
  return raw;
}

// A whole number a plan file states (chunks_used, the batch's echo...); `least` is its smallest value.
uint64_t read_count(const json& v, const std::string& path, const std::string& prefix, const std::string& key,
                    uint64_t least) {
  const bool ok = v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
  if (!ok || v.get<uint64_t>() < least)
    throw InputError(fmt::format("{}: {}{}: expected a whole number{}, got {}; write the value or leave the key out", path,
                                 prefix, key, least ? fmt::format(" >= {}", least) : "", json_preview(v)));
  return v.get<uint64_t>();
}

PlanEntry read_entry(const json& j, const std::string& path, const std::string& prefix) {
  PlanEntry e;
  e.field_prefix = prefix;
  e.where = prefix.empty() ? path : fmt::format("{}: {}", path, prefix.substr(0, prefix.size() - 1));
  if (!j.is_object())
    throw InputError(fmt::format("{}: {}: expected an object holding the three tables, got {}", path,
                                 prefix.empty() ? "the file" : prefix.substr(0, prefix.size() - 1), json_preview(j)));
  for (const auto& item : j.items()) {
    const std::string& key = item.key();
    const json& v = item.value();
    if (key == "scenario" || key == "policy" || key == "refused" || key == "guide_cost_file") {
      if (!v.is_string())
        throw InputError(fmt::format("{}: {}{}: expected a string, got {}", path, prefix, key, json_preview(v)));
      if (key == "scenario") e.scenario = v.get<std::string>();
      if (key == "policy") e.policy = v.get<std::string>();
      if (key == "refused") e.refused = true;
      if (key == "guide_cost_file") e.guide_cost_file = v.get<std::string>();
    } else if (key == "infeasible") {  // j.value("infeasible", false) would throw a type_error on "yes"
      if (!v.is_boolean())
        throw InputError(fmt::format("{}: {}infeasible: expected true or false; write {{\"infeasible\": true}} for a refused "
                                     "batch, or leave the key out",
                                     path, prefix));
    } else if (one_of(key, kFactKeys, std::size(kFactKeys))) {
      const uint64_t n = read_count(v, path, prefix, key, key == "min_max_chunks" ? 1 : 0);
      check::PlanClaims& c = e.claims;
      std::optional<uint64_t>* slot[] = {&c.min_max_chunks, &c.chunks_used, &c.padded_tokens, &c.input_tokens,
                                         &c.batch_size, &c.page_size, &c.buffer_token_size, &c.max_chunks};
      for (size_t i = 0; i < std::size(kFactKeys); ++i)
        if (key == kFactKeys[i]) *slot[i] = n;
    } else if (!one_of(key, kTableKeys, std::size(kTableKeys)) && !one_of(key, kMetadataKeys, std::size(kMetadataKeys))) {
      throw InputError(fmt::format("{}: {}{}: unknown key; a plan holds the keys run --format json writes (scenario, policy, guide_cost_file, "
                                   "batch_size, page_size, buffer_token_size, max_chunks, chunks_used, padded_tokens, "
                                   "input_tokens, buffer_row_offsets, cache_offsets, buffer_lengths; backend, planner, "
                                   "device, buffer_memory, predicted_time, merges_per_query, verification and timings_us are not compared), or infeasible "
                                   "and min_max_chunks",
                                   path, prefix, key));
    }
  }
  const bool infeasible = j.contains("infeasible") && j["infeasible"].get<bool>();
  if (j.contains("infeasible") && !infeasible && e.refused)
    throw InputError(fmt::format("{}: {}infeasible: false, but the plan says refused; drop one of them", path, prefix));
  e.refused = e.refused || infeasible;
  const bool any_table = j.contains("buffer_row_offsets") || j.contains("cache_offsets") || j.contains("buffer_lengths");
  if (e.refused) {
    if (any_table)
      throw InputError(fmt::format("{}: {}{}: a refused plan holds no tables; drop the tables or the refusal", path, prefix,
                                   infeasible ? "infeasible" : "refused"));
    return e;
  }
  for (const char* key : kTableKeys) {
    if (!j.contains(key))
      throw InputError(fmt::format("{}: {}{}: missing; a plan file holds buffer_row_offsets, cache_offsets and "
                                   "buffer_lengths (as `mlaplan run --format json` writes), or {{\"infeasible\": true}}",
                                   path, prefix, key));
  }
  const int64_t u32 = 0xffffffff, i32 = 0x7fffffff;
  e.has_tables = true;
  e.buffer_row_offsets = read_raw_table(j["buffer_row_offsets"], path, prefix, "buffer_row_offsets", true, 0, u32);
  e.cache_offsets = read_raw_table(j["cache_offsets"], path, prefix, "cache_offsets", true, 0, u32);
  e.buffer_lengths = read_raw_table(j["buffer_lengths"], path, prefix, "buffer_lengths", false, -0x80000000ll, i32);
  return e;
}

// Checks a raw table's shape (rows x cols, or a flat list of `rows`) and copies it into `out`;
// returns the problem, or "" when it is a table of that shape with every value in range.
template <typename T>
std::string shape_table(const RawTable& raw, const char* key, size_t rows, size_t cols, const std::string& rows_owner,
                        std::vector<T>& out) {
  const size_t given_rows = raw.matrix ? raw.row_sizes.size() : raw.cells.size();
  if (given_rows != rows) return fmt::format("{}: {} rows, {}", key, given_rows, rows_owner);
  for (size_t r = 0; raw.matrix && r < rows; ++r) {
    if (raw.row_sizes[r] != cols)
      return fmt::format("{}[{}]: {} values, a plan of this scenario has {}", key, r, raw.row_sizes[r], cols);
    // Every row before this one has `cols` values, so row r holds cells [r * cols, (r + 1) * cols).
    if (raw.first_out_of_range && *raw.first_out_of_range >= r * cols && *raw.first_out_of_range < (r + 1) * cols)
      return fmt::format("chunk {}, sequence {}: {} holds {}, outside its type's range", r, *raw.first_out_of_range - r * cols,
                         key, raw.out_of_range_value);
  }
  if (!raw.matrix && raw.first_out_of_range)
    return fmt::format("chunk {}: {} holds {}, outside its type's range", *raw.first_out_of_range, key, raw.out_of_range_value);
  out.resize(raw.cells.size());
  for (size_t i = 0; i < raw.cells.size(); ++i) out[i] = static_cast<T>(raw.cells[i]);
  return "";
}

}  // namespace

PlanFile parse_plan_file(const std::string& text, const std::string& path) {
  json j = parse_json_strict(text, path);  // a key given twice is refused: the gate checks what was written
  if (!j.is_object()) throw InputError(fmt::format("{}: expected an object holding the three tables", path));
  PlanFile file;
  if (!j.contains("scenarios")) {
    file.plans.push_back(read_entry(j, path, ""));
    return file;
  }
  // A list, as run writes for several scenarios or policies: nothing else beside it.
  for (const auto& item : j.items())
    if (item.key() != "scenarios")
      throw InputError(fmt::format("{}: {}: unknown key beside \"scenarios\"; a list file holds only {{\"scenarios\": [...]}}",
                                   path, item.key()));
  const json& list = j["scenarios"];
  if (!list.is_array())
    throw InputError(fmt::format("{}: scenarios: expected a list of plans (as run --format json writes), got {}", path,
                                 json_preview(list)));
  file.is_list = true;
  file.plans.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) file.plans.push_back(read_entry(list[i], path, fmt::format("scenarios[{}].", i)));
  return file;
}

PlanFile load_plan_file(const std::string& path) {
  return parse_plan_file(read_input_file(path, "a plan file (the JSON of run --format json)"), path);
}

LoadedPlan shape_plan_tables(const PlanEntry& e, uint32_t batch_size, uint32_t rows, const std::string& rows_owner) {
  LoadedPlan plan;
  if (e.refused) return plan;
  PlanTables t;
  t.batch_size = batch_size;
  t.max_chunks = rows;
  plan.problem = shape_table(e.buffer_row_offsets, "buffer_row_offsets", rows, size_t{batch_size} + 1, rows_owner,
                             t.buffer_row_offsets);
  if (plan.problem.empty())
    plan.problem = shape_table(e.cache_offsets, "cache_offsets", rows, batch_size, rows_owner, t.cache_offsets);
  if (plan.problem.empty()) plan.problem = shape_table(e.buffer_lengths, "buffer_lengths", rows, 0, rows_owner, t.buffer_lengths);
  if (plan.problem.empty()) plan.tables = std::move(t);
  return plan;
}

LoadedPlan load_plan_tables(const std::string& path, uint32_t batch_size, uint32_t max_chunks) {
  const std::string text = read_input_file(path, "a plan file (the JSON of run --format json)");
  return parse_plan_tables(text, path, batch_size, max_chunks);
}

LoadedPlan parse_plan_tables(const std::string& text, const std::string& path, uint32_t batch_size,
                             uint32_t max_chunks) {
  const PlanFile file = parse_plan_file(text, path);
  if (file.is_list || file.plans.size() != 1)
    throw InputError(fmt::format("{}: holds a list of {} plans; give a file holding one plan", path, file.plans.size()));
  return shape_plan_tables(file.plans[0], batch_size, max_chunks,
                           fmt::format("the scenario has max_chunks = {}", max_chunks));
}

}  // namespace mlaplan::io
