#include "mlaplan/io/scenario_io.hpp"

#include "mlaplan/io/closest_name.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "mlaplan/errors.hpp"
#include "mlaplan/io/input_file.hpp"
#include "mlaplan/io/json_error.hpp"
#include "mlaplan/profile/json_text.hpp"
#include "mlaplan/profile/stop_request.hpp"

namespace mlaplan::io {

using json = nlohmann::json;

namespace {

constexpr const char* kScenarioKeys[] = {"name", "description", "page_size", "buffer_token_size", "max_chunks",
                                         "cache_lengths", "input_row_offsets", "input_lengths", "expected"};
constexpr const char* kExpectedKeys[] = {"infeasible", "min_max_chunks", "padded_tokens", "chunks_used",
                                         "buffer_row_offsets", "cache_offsets", "buffer_lengths"};

// Reads one field of one scenario; every error names the file and the full field path.
class FieldReader {
 public:
  FieldReader(std::string file, std::string prefix) : file_(std::move(file)), prefix_(std::move(prefix)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw InputError(fmt::format("{}: {}{}: {}", file_, prefix_, field, what));
  }

  static std::string shown(const json& v) { return json_preview(v, 40); }

  uint64_t integer(const json& v, const std::string& field, uint64_t lo, uint64_t hi, const char* expectation) const {
    // JSON's -0 is zero, which nlohmann reads as a signed 0: refusing it as "not non-negative, got 0"
    // would contradict itself.
    const bool zero = v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() == 0;
    if ((!v.is_number_unsigned() && !zero) || (zero ? 0 : v.get<uint64_t>()) < lo || (zero ? 0 : v.get<uint64_t>()) > hi)
      fail(field, fmt::format("expected {}, got {}", expectation, shown(v)));
    return zero ? 0 : v.get<uint64_t>();
  }
  uint32_t u32(const json& v, const std::string& field) const {
    return static_cast<uint32_t>(integer(v, field, 0, std::numeric_limits<uint32_t>::max(),
                                         "a non-negative integer below 2^32"));
  }
  int32_t length(const json& v, const std::string& field) const {
    if (v.is_number_integer() && v.get<int64_t>() == -1) return -1;
    return static_cast<int32_t>(integer(v, field, 0, std::numeric_limits<int32_t>::max(),
                                        "-1 or a non-negative integer below 2^31"));
  }

  const json& array(const json& obj, const std::string& key) const {
    const json& v = obj.at(key);
    if (!v.is_array()) fail(key, fmt::format("expected an array of integers, got {}", shown(v)));
    return v;
  }
  std::vector<uint32_t> u32_array(const json& obj, const std::string& key) const {
    const json& a = array(obj, key);
    std::vector<uint32_t> out;
    out.reserve(a.size());
    for (size_t i = 0; i < a.size(); ++i) out.push_back(u32(a[i], fmt::format("{}[{}]", key, i)));
    return out;
  }

  // A table given as `rows` lists of `cols` values, flattened row-major.
  template <typename T, typename Read>
  std::vector<T> table(const json& obj, const std::string& key, size_t rows, size_t cols, Read read) const {
    const json& a = array(obj, key);
    if (a.size() != rows)
      fail(key, fmt::format("expected {} rows (one per chunk, max_chunks = {}), got {}", rows, rows, a.size()));
    std::vector<T> out;
    out.reserve(rows * cols);
    for (size_t r = 0; r < rows; ++r) {
      const std::string row_name = fmt::format("{}[{}]", key, r);
      if (!a[r].is_array() || a[r].size() != cols)
        fail(row_name, fmt::format("expected a list of {} integers, got {}", cols, shown(a[r])));
      for (size_t c = 0; c < cols; ++c) out.push_back(read(a[r][c], fmt::format("{}[{}]", row_name, c)));
    }
    return out;
  }

  void reject_unknown_keys(const json& obj, const std::string& where, const char* const* known, size_t n) const {
    for (const auto& item : obj.items()) {
      bool ok = false;
      for (size_t i = 0; i < n; ++i) ok = ok || item.key() == known[i];
      if (ok) continue;
      std::string list;
      for (size_t i = 0; i < n; ++i) list += (i ? ", " : "") + std::string(known[i]);
      const std::string hint = did_you_mean(item.key(), std::vector<std::string>(known, known + n));
      fail(where + item.key(), fmt::format("unknown key{}; the keys allowed here are {}", hint, list));
    }
  }

 private:
  std::string file_;
  std::string prefix_;
};

check::ExpectedPlan parse_expected(const json& e, const std::string& file, const std::string& prefix, const Batch& batch) {
  const FieldReader top(file, prefix);
  if (!e.is_object()) top.fail("expected", "expected an object such as {\"infeasible\": true} or the three tables");
  const FieldReader r(file, prefix + "expected.");
  r.reject_unknown_keys(e, "", kExpectedKeys, std::size(kExpectedKeys));
  check::ExpectedPlan x;
  const size_t m = batch.max_chunks, b = batch.batch_size();
  if (e.contains("infeasible")) {
    if (!e["infeasible"].is_boolean()) r.fail("infeasible", "expected true or false");
    x.infeasible = e["infeasible"].get<bool>();
  }
  if (e.contains("min_max_chunks")) {
    if (!x.infeasible) r.fail("min_max_chunks", "only allowed with \"infeasible\": true");
    x.min_max_chunks =
        r.integer(e["min_max_chunks"], "min_max_chunks", 1, std::numeric_limits<uint64_t>::max(), "a positive integer");
  }
  for (const char* key : {"padded_tokens", "chunks_used", "buffer_row_offsets", "cache_offsets", "buffer_lengths"}) {
    if (x.infeasible && e.contains(key))
      r.fail(key, "an infeasible scenario has no plan; remove this key or the \"infeasible\" flag");
  }
  if (e.contains("padded_tokens")) x.padded_tokens = r.u32(e["padded_tokens"], "padded_tokens");
  if (e.contains("chunks_used")) x.chunks_used = r.u32(e["chunks_used"], "chunks_used");
  auto u32 = [&](const json& v, const std::string& f) { return r.u32(v, f); };
  auto len = [&](const json& v, const std::string& f) { return r.length(v, f); };
  if (e.contains("buffer_row_offsets")) x.buffer_row_offsets = r.table<uint32_t>(e, "buffer_row_offsets", m, b + 1, u32);
  if (e.contains("cache_offsets")) x.cache_offsets = r.table<uint32_t>(e, "cache_offsets", m, b, u32);
  if (e.contains("buffer_lengths")) {
    const json& a = r.array(e, "buffer_lengths");
    if (a.size() != m) r.fail("buffer_lengths", fmt::format("expected {} values (max_chunks), got {}", m, a.size()));
    std::vector<int32_t> v;
    for (size_t i = 0; i < a.size(); ++i) v.push_back(len(a[i], fmt::format("buffer_lengths[{}]", i)));
    x.buffer_lengths = std::move(v);
  }
  return x;
}

check::Scenario parse_one(const json& obj, const std::string& file, const std::string& prefix, const std::string& default_name) {
  const FieldReader r(file, prefix);
  if (!obj.is_object()) {
    // The entry itself is the field: "scenarios[1]", not the prefix and the field again.
    if (prefix.empty()) r.fail("(top level)", "expected a scenario object or {\"scenarios\": [...]}");
    FieldReader(file, "").fail(prefix.substr(0, prefix.size() - 1),
                               fmt::format("expected a scenario object, got {}", json_preview(obj, 40)));
  }
  r.reject_unknown_keys(obj, "", kScenarioKeys, std::size(kScenarioKeys));

  check::Scenario s;
  s.file = file;
  s.field_prefix = prefix;
  s.name = default_name;
  if (obj.contains("name")) {
    if (!obj["name"].is_string() || obj["name"].get<std::string>().empty()) r.fail("name", "expected a non-empty string");
    s.name = obj["name"].get<std::string>();
  }
  if (obj.contains("description")) {
    if (!obj["description"].is_string()) r.fail("description", "expected a string");
    s.description = obj["description"].get<std::string>();
  }
  for (const char* key : {"page_size", "buffer_token_size", "max_chunks", "cache_lengths"}) {
    if (!obj.contains(key)) r.fail(key, "missing; every scenario needs page_size, buffer_token_size, max_chunks and cache_lengths");
  }
  Batch& b = s.batch;
  b.page_size = static_cast<uint32_t>(
      r.integer(obj["page_size"], "page_size", 1, std::numeric_limits<uint32_t>::max(), "an integer from 1 to 2^32 - 1"));
  b.buffer_token_size = static_cast<uint32_t>(r.integer(obj["buffer_token_size"], "buffer_token_size", 1,
                                                        std::numeric_limits<int32_t>::max(),
                                                        "an integer from 1 to 2^31 - 1 (it must fit in int32)"));
  b.max_chunks = static_cast<uint32_t>(
      r.integer(obj["max_chunks"], "max_chunks", 1, std::numeric_limits<uint32_t>::max(), "an integer from 1 to 2^32 - 1"));
  b.cache_lengths = r.u32_array(obj, "cache_lengths");
  const size_t batch_size = b.cache_lengths.size();

  const bool has_offsets = obj.contains("input_row_offsets"), has_lengths = obj.contains("input_lengths");
  if (has_offsets == has_lengths)
    r.fail(has_offsets ? "input_lengths" : "input_row_offsets",
           has_offsets ? "give either input_row_offsets or input_lengths, not both"
                       : "missing; give input_row_offsets (batch_size + 1 values) or input_lengths (batch_size values)");
  if (has_offsets) {
    b.input_row_offsets = r.u32_array(obj, "input_row_offsets");
    if (b.input_row_offsets.size() != batch_size + 1)
      r.fail("input_row_offsets", fmt::format("expected {} values (batch_size + 1, since cache_lengths has {}), got {}",
                                              batch_size + 1, batch_size, b.input_row_offsets.size()));
    for (size_t i = 1; i < b.input_row_offsets.size(); ++i) {
      if (b.input_row_offsets[i] < b.input_row_offsets[i - 1])
        r.fail(fmt::format("input_row_offsets[{}]", i),
               fmt::format("{} is below the previous offset {}; offsets must be non-decreasing", b.input_row_offsets[i],
                           b.input_row_offsets[i - 1]));
    }
  } else {
    const std::vector<uint32_t> lengths = r.u32_array(obj, "input_lengths");
    if (lengths.size() != batch_size)
      r.fail("input_lengths", fmt::format("expected {} values (one per entry of cache_lengths), got {}", batch_size,
                                          lengths.size()));
    b.input_row_offsets.assign(1, 0);
    uint64_t total = 0;
    for (size_t i = 0; i < lengths.size(); ++i) {
      total += lengths[i];
      if (total > std::numeric_limits<uint32_t>::max())
        r.fail(fmt::format("input_lengths[{}]", i), "the running total of input rows passes 2^32 - 1; row offsets are 32-bit");
      b.input_row_offsets.push_back(static_cast<uint32_t>(total));
    }
  }
  try {
    validate_batch(b);
  } catch (const InputError& e) {
    throw InputError(s.locate(e.what()));
  }
  if (obj.contains("expected")) s.expected = parse_expected(obj["expected"], file, prefix, b);
  return s;
}

}  // namespace

std::vector<check::Scenario> parse_scenarios(const std::string& text, const std::string& file, const std::string& default_name) {
  const json j = parse_json_strict(text, file);
  std::vector<check::Scenario> out;
  if (j.is_object() && j.contains("scenarios")) {
    if (j.size() != 1)
      throw InputError(fmt::format("{}: a file with \"scenarios\" may hold no other top-level key", file));
    const json& list = j["scenarios"];
    if (!list.is_array()) throw InputError(fmt::format("{}: scenarios: expected an array of scenario objects", file));
    for (size_t i = 0; i < list.size(); ++i) {
      if ((i & 1023) == 0 && profile::stop_requested()) throw Interrupted(fmt::format("interrupted while reading {}", file));
      out.push_back(parse_one(list[i], file, fmt::format("scenarios[{}].", i), fmt::format("{}[{}]", default_name, i)));
    }
    return out;
  }
  out.push_back(parse_one(j, file, "", default_name));
  return out;
}

std::vector<check::Scenario> load_scenario_file(const std::string& path) {
  const std::string text = read_input_file(path, "a scenario file (.json)");
  return parse_scenarios(text, path, std::filesystem::path(path).stem().string());
}

std::string scenario_to_json(const check::Scenario& s) {
  // Keys in the documented order, one per line, each list on one line (a table one row per line):
  // a generated batch of hundreds of sequences stays readable and diffable.
  using ordered = nlohmann::ordered_json;
  std::string out = "{\n";
  auto put = [&out](const char* indent, const std::string& key, const std::string& value, bool last) {
    out += fmt::format("{}{}: {}{}\n", indent, profile::json_text(ordered(key)), value, last ? "" : ",");
  };
  const bool has_expected = s.expected.has_value();
  auto text = [](const std::string& v) {  // invalid UTF-8 (a name from a file name) as U+FFFD, never a throw
    return profile::json_text(ordered(v));
  };
  put("  ", "name", text(s.name), false);
  if (!s.description.empty()) put("  ", "description", text(s.description), false);
  put("  ", "page_size", std::to_string(s.batch.page_size), false);
  put("  ", "buffer_token_size", std::to_string(s.batch.buffer_token_size), false);
  put("  ", "max_chunks", std::to_string(s.batch.max_chunks), false);
  put("  ", "cache_lengths", ordered(s.batch.cache_lengths).dump(), false);
  put("  ", "input_row_offsets", ordered(s.batch.input_row_offsets).dump(), !has_expected);
  if (has_expected) {
    const check::ExpectedPlan& x = *s.expected;
    const size_t m = s.batch.max_chunks, b = s.batch.batch_size();
    auto rows = [m](const auto& flat, size_t cols) {
      std::string t = "[";
      for (size_t r = 0; r < m; ++r)
        t += (r ? ",\n      " : "\n      ") +
             ordered(std::vector(flat.begin() + r * cols, flat.begin() + (r + 1) * cols)).dump();
      return t + (m ? "\n    ]" : "]");
    };
    std::vector<std::pair<std::string, std::string>> e;
    if (x.infeasible) e.emplace_back("infeasible", "true");
    if (x.min_max_chunks) e.emplace_back("min_max_chunks", std::to_string(*x.min_max_chunks));
    if (x.padded_tokens) e.emplace_back("padded_tokens", std::to_string(*x.padded_tokens));
    if (x.chunks_used) e.emplace_back("chunks_used", std::to_string(*x.chunks_used));
    if (x.buffer_row_offsets) e.emplace_back("buffer_row_offsets", rows(*x.buffer_row_offsets, b + 1));
    if (x.cache_offsets) e.emplace_back("cache_offsets", rows(*x.cache_offsets, b));
    if (x.buffer_lengths) e.emplace_back("buffer_lengths", ordered(*x.buffer_lengths).dump());
    out += "  \"expected\": {\n";
    for (size_t i = 0; i < e.size(); ++i) put("    ", e[i].first, e[i].second, i + 1 == e.size());
    out += "  }\n";
  }
  return out + "}\n";
}

}  // namespace mlaplan::io
