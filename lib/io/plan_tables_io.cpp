#include "mlaplan/plan_tables_io.hpp"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "mlaplan/errors.hpp"
#include "mlaplan/input_file.hpp"
#include "mlaplan/json_error.hpp"

namespace mlaplan {

using json = nlohmann::json;

namespace {

// Reads `rows` x `cols` integers into `out`; returns a problem description, or "" when the shape
// and the value range are right. `cols` 0 with `matrix` false reads a flat list.
template <typename T>
std::string read_table(const json& j, const std::string& path, const char* key, size_t rows, size_t cols, bool matrix,
                       int64_t lo, int64_t hi, std::vector<T>& out) {
  const json& t = j.at(key);
  auto not_integers = [&](const std::string& where) {
    return InputError(fmt::format("{}: {}: expected {} of integers", path, where, matrix ? "a list of lists" : "a list"));
  };
  if (!t.is_array()) throw not_integers(key);
  if (t.size() != rows) return fmt::format("{}: {} rows, the scenario has max_chunks = {}", key, t.size(), rows);
  out.clear();
  out.reserve(rows * (matrix ? cols : 1));
  for (size_t r = 0; r < rows; ++r) {
    const json& row = matrix ? t[r] : t;
    if (matrix && !row.is_array()) throw not_integers(fmt::format("{}[{}]", key, r));
    if (matrix && row.size() != cols)
      return fmt::format("{}[{}]: {} values, a plan of this scenario has {}", key, r, row.size(), cols);
    for (size_t c = 0; c < (matrix ? cols : 1); ++c) {
      const json& v = matrix ? row[c] : row[r];
      if (!v.is_number_integer()) throw not_integers(matrix ? fmt::format("{}[{}][{}]", key, r, c) : fmt::format("{}[{}]", key, r));
      const bool in_range = v.is_number_unsigned() ? v.get<uint64_t>() <= static_cast<uint64_t>(hi)
                                                   : v.get<int64_t>() >= lo && v.get<int64_t>() <= hi;
      if (!in_range)
        return matrix ? fmt::format("chunk {}, sequence {}: {} holds {}, outside its type's range", r, c, key, v.dump())
                      : fmt::format("chunk {}: {} holds {}, outside its type's range", r, key, v.dump());
      out.push_back(static_cast<T>(v.get<int64_t>()));
    }
  }
  return "";
}

}  // namespace

LoadedPlan load_plan_tables(const std::string& path, uint32_t batch_size, uint32_t max_chunks) {
  const std::string text = read_input_file(path, "a plan file (the JSON of run --format json)");
  return parse_plan_tables(text, path, batch_size, max_chunks);
}

LoadedPlan parse_plan_tables(const std::string& text, const std::string& path, uint32_t batch_size,
                             uint32_t max_chunks) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError(json_error_message(path, text, e.byte, e.what()));
  } catch (const json::out_of_range& e) {  // a number past double's range, such as 1e309
    throw InputError(json_error_message(path, e.what()));
  }
  if (!j.is_object()) throw InputError(fmt::format("{}: expected an object holding the three tables", path));
  LoadedPlan plan;
  if (j.contains("infeasible")) {  // j.value("infeasible", false) would throw a type_error on "yes"
    if (!j["infeasible"].is_boolean())
      throw InputError(fmt::format("{}: infeasible: expected true or false; write {{\"infeasible\": true}} for a refused "
                                   "batch, or leave the key out",
                                   path));
    if (j["infeasible"].get<bool>()) return plan;
  }
  for (const char* key : {"buffer_row_offsets", "cache_offsets", "buffer_lengths"}) {
    if (!j.contains(key))
      throw InputError(fmt::format("{}: {}: missing; a plan file holds buffer_row_offsets, cache_offsets and "
                                   "buffer_lengths (as `mlaplan run --format json` writes), or {{\"infeasible\": true}}",
                                   path, key));
  }
  PlanTables t;
  t.batch_size = batch_size;
  t.max_chunks = max_chunks;
  const int64_t u32 = 0xffffffff, i32 = 0x7fffffff;
  plan.problem = read_table(j, path, "buffer_row_offsets", max_chunks, size_t{batch_size} + 1, true, 0, u32, t.buffer_row_offsets);
  if (plan.problem.empty())
    plan.problem = read_table(j, path, "cache_offsets", max_chunks, batch_size, true, 0, u32, t.cache_offsets);
  if (plan.problem.empty())
    plan.problem = read_table(j, path, "buffer_lengths", max_chunks, 0, false, -0x80000000ll, i32, t.buffer_lengths);
  if (plan.problem.empty()) plan.tables = std::move(t);
  return plan;
}

}  // namespace mlaplan
