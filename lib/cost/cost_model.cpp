#include "mlaplan/cost/cost_model.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "mlaplan/errors.hpp"
#include "mlaplan/io/input_file.hpp"
#include "mlaplan/io/json_error.hpp"

namespace mlaplan::cost {

using json = nlohmann::json;

namespace {

constexpr uint64_t kMaxGeometry = 1u << 20;  // no GPU has a million SMs; a larger value is a broken file
constexpr uint32_t kMaxMajor = 30;            // compute capabilities reach 12.x in 2026; 90 is SM90 miswritten
// A second per unit of any term: calibrated files hold 0 to about 50 us. The bound keeps every sum
// finite: a batch's terms stay below about 1e20 units, so a sweep's sums stay far below a double's
// (and a float's) range, where 1e308 made the times inf and their shares NaN.
constexpr double kMaxCoefficient = 1e6;
// A CPU probe (mlaplan.prefill.cpu_speed, ~1 ms on the H200's host) past this is a unit slip; one
// under a microsecond is no probe (it printed as 0.000 ms and would scale a run's costs a millionfold).
constexpr double kMinProbeMs = 1e-3;
constexpr double kMaxProbeMs = 1e4;

// "9.0" -> 90; 0 for text that is not MAJOR.MINOR (one or two digits, a point, one digit).
uint32_t parse_capability_text(const std::string& t) {
  const size_t dot = t.find('.');
  if (dot == std::string::npos || dot == 0 || dot > 2 || dot + 2 != t.size()) return 0;
  for (size_t i = 0; i < t.size(); ++i)
    if (i != dot && !std::isdigit(static_cast<unsigned char>(t[i]))) return 0;
  const uint32_t major = static_cast<uint32_t>(std::stoul(t.substr(0, dot)));
  return major >= 1 && major <= kMaxMajor ? major * 10 + static_cast<uint32_t>(t[dot + 1] - '0') : 0;
}

// 9.0 (or 9) -> 90; 0 for a number that is not a capability with one digit after the point.
uint32_t parse_capability_number(double v) {
  const double tenths = std::round(v * 10);
  if (!(v >= 1) || v >= kMaxMajor + 1 || std::fabs(v * 10 - tenths) > 1e-6) return 0;
  return static_cast<uint32_t>(tenths);
}

std::string term_list() {
  std::string s;
  for (size_t i = 0; i < kTerms; ++i) s += (i ? ", " : "") + std::string(coefficient_name(static_cast<Term>(i)));
  return s;
}

class Reader {
 public:
  Reader(const std::string& path, const json& doc) : path_(path), doc_(doc) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw InputError(fmt::format("{}: {}: {}", path_, field, what));
  }

  const json& object(const json& parent, const std::string& key, const std::string& field) const {
    if (!parent.contains(key)) fail(field, "missing; " + hint(field));
    const json& v = parent[key];
    if (!v.is_object()) fail(field, fmt::format("{} is not an object; {}", io::json_preview(v), hint(field)));
    return v;
  }

  std::string text(const json& parent, const std::string& key, const std::string& field, bool required) const {
    if (!parent.contains(key) || parent[key].is_null()) {
      if (required) fail(field, "missing; " + hint(field));
      return "";
    }
    const json& v = parent[key];
    if (!v.is_string()) fail(field, fmt::format("{} is not a string; {}", io::json_preview(v), hint(field)));
    return v.get<std::string>();
  }

  uint32_t count(const json& parent, const std::string& key, const std::string& field) const {
    if (!parent.contains(key)) fail(field, "missing; " + hint(field));
    const json& v = parent[key];
    if (!v.is_number_unsigned() || v.get<uint64_t>() == 0 || v.get<uint64_t>() > kMaxGeometry)
      fail(field, fmt::format("{} is not a whole number from 1 to {}; {}", io::json_preview(v), kMaxGeometry, hint(field)));
    return static_cast<uint32_t>(v.get<uint64_t>());
  }

  // The file's compute_capability ("9.0" or 9.0), or where it has none the one its gpu names.
  uint32_t compute_capability(const json& doc, const std::string& gpu) const {
    const std::string fix = "give the GPU's as \"9.0\" (major.minor, as torch.cuda.get_device_capability says)";
    if (!doc.contains("compute_capability") || doc["compute_capability"].is_null()) {
      const uint32_t sm = known_gpu_sm(gpu);
      if (sm == 0)
        fail("compute_capability",
             fmt::format("missing, and {} is not a GPU mlaplan knows; add \"compute_capability\": \"9.0\" (the GPU's)",
                         io::json_preview(json(gpu))));
      return sm;
    }
    const json& v = doc["compute_capability"];
    uint32_t sm = 0;
    if (v.is_string()) sm = parse_capability_text(v.get<std::string>());
    else if (v.is_number()) sm = parse_capability_number(v.get<double>());
    if (sm == 0)
      fail("compute_capability", fmt::format("{} is not a compute capability from 1.0 to {}.9; {}", io::json_preview(v),
                                             kMaxMajor, fix));
    return sm;
  }

  double coefficient(const json& terms, const std::string& key) const {
    const std::string field = "coefficients." + key;
    if (!terms.contains(key))
      fail(field, "missing; every term needs a coefficient (0 where it costs nothing): " + term_list());
    const json& v = terms[key];
    if (!v.is_number())
      fail(field, fmt::format("{} is not a number; give microseconds per unit, 0 or more", io::json_preview(v)));
    const double c = v.get<double>();
    if (c < 0)
      fail(field, fmt::format("{} is negative; a coefficient is microseconds per unit, 0 or more (refit, or set it to 0)",
                              io::json_preview(v)));
    if (c > kMaxCoefficient)
      fail(field, fmt::format("{} is above {:.0f} (a second per unit); a coefficient is microseconds per unit, calibrated "
                              "ones below 100 (refit, or check its units)",
                              io::json_preview(v), kMaxCoefficient));
    return c;
  }

  // The optional host section: {holds_for, pad_v, launch_us: {kind: us, ...}} (docs/cost-model.md).
  HostCosts host(const json& doc) const {
    const json& h = object(doc, "host", "host");
    HostCosts out;
    out.holds_for = text(h, "holds_for", "host.holds_for", true);
    if (out.holds_for.empty()) fail("host.holds_for", "empty; " + hint("host.holds_for"));
    if (!h.contains("pad_v") || !h["pad_v"].is_boolean())
      fail("host.pad_v", fmt::format("{}; say whether the up-projection pads V (FlashAttention-2 through varlen_attn: true)",
                                     h.contains("pad_v") ? io::json_preview(h["pad_v"]) + " is not true or false" : "missing"));
    out.pad_v = h["pad_v"].get<bool>();
    // When the host runs were timed: a section refitted later than the graph fit says so (optional).
    out.date = text(h, "date", "host.date", false);
    if (h.contains("date") && !h["date"].is_null() && out.date.empty()) fail("host.date", "empty; " + hint("host.date"));
    if (h.contains("probe_ms") && !h["probe_ms"].is_null()) {
      const json& v = h["probe_ms"];
      if (!v.is_number() || !(v.get<double>() >= kMinProbeMs) || v.get<double>() > kMaxProbeMs)
        fail("host.probe_ms", fmt::format("{} is not a number from {:g} to {:.0f}; it is the probe's ms the host costs "
                                          "are stated at (python -m mlaplan.calibrate writes it), or leave it out",
                                          io::json_preview(v), kMinProbeMs, kMaxProbeMs));
      out.probe_ms = v.get<double>();
    }
    if (h.contains("probe") && !h["probe"].is_null()) {
      const json& v = h["probe"];
      if (!v.is_string() || (v.get<std::string>() != "cpu" && v.get<std::string>() != "dispatch"))
        fail("host.probe", fmt::format("{} is not \"cpu\" or \"dispatch\"; it names the probe probe_ms is of "
                                       "(python -m mlaplan.calibrate writes it), or leave it out for \"cpu\"",
                                       io::json_preview(v)));
      out.probe = v.get<std::string>();
    }
    // Whether the runs identify the costs (python -m mlaplan.calibrate writes both; absent: identified).
    if (h.contains("identified") && !h["identified"].is_null()) {
      if (!h["identified"].is_boolean())
        fail("host.identified", fmt::format("{} is not true or false; calibrate writes it (false: the runs only bound the "
                                            "host costs), or leave it out",
                                            io::json_preview(h["identified"])));
      out.identified = h["identified"].get<bool>();
    }
    if (h.contains("unidentified_because") && !h["unidentified_because"].is_null()) {
      const json& v = h["unidentified_because"];
      const std::string fix = "give a list of reasons (strings) as calibrate writes it, or leave it out";
      if (!v.is_array()) fail("host.unidentified_because", fmt::format("{} is not a list; {}", io::json_preview(v), fix));
      for (const json& reason : v) {
        if (!reason.is_string())
          fail("host.unidentified_because", fmt::format("{} is not a string; {}", io::json_preview(reason), fix));
        out.unidentified_because.push_back(reason.get<std::string>());
      }
    }
    const json& us = object(h, "launch_us", "host.launch_us");
    for (auto it = us.begin(); it != us.end(); ++it) {
      bool known = false;
      for (size_t i = 0; i < kLaunchKinds; ++i) known = known || it.key() == launch_kind_name(static_cast<LaunchKind>(i));
      if (!known) fail("host.launch_us." + it.key(), "unknown launch kind; the kinds are " + kind_list());
    }
    for (size_t i = 0; i < kLaunchKinds; ++i) {
      const std::string key = launch_kind_name(static_cast<LaunchKind>(i)), field = "host.launch_us." + key;
      if (!us.contains(key)) fail(field, "missing; every launch kind needs a host cost (0 where it costs nothing): " + kind_list());
      const json& v = us[key];
      if (!v.is_number()) fail(field, fmt::format("{} is not a number; give microseconds per launch, 0 or more", io::json_preview(v)));
      const double c = v.get<double>();
      if (c < 0 || c > kMaxCoefficient)
        fail(field, fmt::format("{} is not from 0 to {:.0f}; a host cost is microseconds per launch, measured ones below 1000 "
                                "(python -m mlaplan.calibrate measures them)",
                                io::json_preview(v), kMaxCoefficient));
      out.us[i] = c;
    }
    return out;
  }

 private:
  static std::string kind_list() {
    std::string s;
    for (size_t i = 0; i < kLaunchKinds; ++i) s += (i ? ", " : "") + std::string(launch_kind_name(static_cast<LaunchKind>(i)));
    return s;
  }

  static std::string hint(const std::string& field) {
    if (field == "model") return "give the model preset or config model_type it was calibrated for, e.g. \"deepseek-v3\"";
    if (field == "tp") return "give the tensor-parallel degree it was calibrated for, e.g. 8";
    if (field == "dtype") return "give \"bf16\" or \"fp8\"";
    if (field.rfind("geometry", 0) == 0)
      return "give geometry {heads, sms, blocks_per_sm, tile_queries} as docs/cost-model.md describes";
    if (field == "host.holds_for") return "name the host CPU, the torch version and the loop the host costs were measured with";
    if (field == "host.date")
      return "give the date the host runs were timed, e.g. \"2026-12-04\" (python -m mlaplan.calibrate writes it), or leave it out";
    if (field == "gpu" || field == "kernels.attention" || field == "date" || field == "kernels" || field == "timing")
      return "say what the calibration ran on (docs/cost-model.md); a prediction holds only for those kernels";
    return "see docs/cost-model.md";
  }

  const std::string& path_;
  const json& doc_;
};

}  // namespace

double CostModel::predict_us(const Features& f) const {
  double us = 0;
  for (size_t i = 0; i < kTerms; ++i) us += coefficients[i] * f.values[i];
  return us;
}

const char* scheduler_name(Scheduler s) {
  return s == Scheduler::sectioned ? "sectioned" : s == Scheduler::sorted ? "sorted" : "grid";
}

bool scheduler_named(const std::string& name, Scheduler& out) {
  if (name.empty() || name == "grid") out = Scheduler::grid;
  else if (name == "sorted") out = Scheduler::sorted;
  else if (name == "sectioned") out = Scheduler::sectioned;
  else return false;
  return true;
}

std::string compute_capability_text(uint32_t sm) { return fmt::format("{}.{}", sm / 10, sm % 10); }

uint32_t known_gpu_sm(const std::string& gpu) {
  static const std::pair<const char*, uint32_t> known[] = {
      {"H100", 90},  {"H200", 90},  {"H800", 90}, {"H20", 90},  {"GH200", 90}, {"B100", 100}, {"B200", 100},
      {"GB200", 100}, {"B300", 103}, {"GB300", 103}, {"A100", 80}, {"A800", 80}, {"A30", 80},  {"A10", 86},
      {"A10G", 86},  {"L4", 89},    {"L40", 89},  {"L40S", 89}};
  // The name's words (runs of letters and digits), each compared whole: "A100-SXM4-80GB" has A100, not A10.
  std::string word;
  for (size_t i = 0; i <= gpu.size(); ++i) {
    const unsigned char c = i < gpu.size() ? static_cast<unsigned char>(gpu[i]) : ' ';
    if (std::isalnum(c)) {
      word += static_cast<char>(std::toupper(c));
      continue;
    }
    for (const auto& [name, sm] : known)
      if (word == name) return sm;
    word.clear();
  }
  return 0;
}

std::string CostModel::describe(bool eager) const {
  std::string s = gpu + ", " + attention + " attention";
  if (!merge.empty()) s += ", " + merge + " merge";
  if (up_projection == "fused") s += ", mlaplan's fused loop";
  if (!timing.empty()) s += ", " + timing + " timing";
  if (eager && host) s += " + host costs, priced eagerly";
  return s + ", calibrated " + date;
}

namespace {

// The workloads whose verdict in calibrate's held-out check is MISS, each with the targets it missed.
// Leniently read: the section prices nothing, so a hand-written or older shape is passed over.
std::vector<std::string> heldout_missed(const json& doc) {
  std::vector<std::string> out;
  if (!doc.contains("heldout") || !doc["heldout"].is_object()) return out;
  const json& h = doc["heldout"];
  if (!h.contains("workloads") || !h["workloads"].is_object()) return out;
  for (auto it = h["workloads"].begin(); it != h["workloads"].end(); ++it) {
    const json& w = it.value();
    if (!w.is_object() || !w.contains("verdict") || w["verdict"] != "MISS") continue;
    std::string why;
    if (w.contains("missed") && w["missed"].is_array())
      for (const json& m : w["missed"])
        if (m.is_string()) why += (why.empty() ? "" : "; ") + m.get<std::string>();
    out.push_back(why.empty() ? it.key() : fmt::format("{} ({})", it.key(), why));
  }
  return out;
}

}  // namespace

CostModel parse_cost_model(const std::string& text, const std::string& path) {
  const json doc = io::parse_json_strict(text, path);
  Reader r(path, doc);
  if (!doc.is_object()) r.fail("(top level)", "a cost file is a JSON object; see docs/cost-model.md");
  const std::string format = r.text(doc, "format", "format", false);
  if (format != kCostFormat)
    r.fail("format", fmt::format("{} is not \"{}\"; is this a cost file? (python -m mlaplan.calibrate writes one)",
                                 format.empty() ? "missing" : "\"" + format + "\"", kCostFormat));
  if (!doc.contains("version") || !doc["version"].is_number_integer() || doc["version"].get<int64_t>() != kCostFormatVersion)
    r.fail("version", fmt::format("{} is not {}; this mlaplan reads version {} cost files",
                                  doc.contains("version") ? io::json_preview(doc["version"]) : "missing", kCostFormatVersion,
                                  kCostFormatVersion));
  CostModel m;
  m.path = path;
  m.model = r.text(doc, "model", "model", true);
  if (m.model.empty()) r.fail("model", "empty; give the model preset it was calibrated for, e.g. \"deepseek-v3\"");
  m.tp = r.count(doc, "tp", "tp");
  m.dtype = r.text(doc, "dtype", "dtype", true);
  if (m.dtype != "bf16" && m.dtype != "fp8") r.fail("dtype", fmt::format("\"{}\" is not bf16 or fp8", m.dtype));
  m.gpu = r.text(doc, "gpu", "gpu", true);
  m.sm = r.compute_capability(doc, m.gpu);
  const json& kernels = r.object(doc, "kernels", "kernels");
  m.attention = r.text(kernels, "attention", "kernels.attention", true);
  m.merge = r.text(kernels, "merge", "kernels.merge", false);
  const std::string up = r.text(kernels, "up_projection", "kernels.up_projection", false);
  if (!up.empty() && up != "unfused" && up != "fused")
    r.fail("kernels.up_projection", fmt::format("{} is not unfused (the engines' loop) or fused (mlaplan's own); leave "
                                                "it out for unfused", io::json_preview(kernels["up_projection"])));
  if (!up.empty()) m.up_projection = up;
  m.timing = r.text(doc, "timing", "timing", false);
  m.date = r.text(doc, "date", "date", true);
  const json& g = r.object(doc, "geometry", "geometry");
  m.geometry.heads = r.count(g, "heads", "geometry.heads");
  m.geometry.sms = r.count(g, "sms", "geometry.sms");
  m.geometry.blocks_per_sm = r.count(g, "blocks_per_sm", "geometry.blocks_per_sm");
  m.geometry.tile_queries = r.count(g, "tile_queries", "geometry.tile_queries");
  const std::string scheduler = r.text(g, "scheduler", "geometry.scheduler", false);
  if (!scheduler_named(scheduler, m.geometry.scheduler))
    r.fail("geometry.scheduler", fmt::format("\"{}\" is not grid (FlashAttention-2's), sorted or sectioned "
                                             "(FlashAttention-3's); leave it out for grid", scheduler));
  // Optional: files without the small-GEMM term have none (every row priced alike).
  if (g.contains("small_gemm_rows")) {
    const json& v = g["small_gemm_rows"];
    if (!v.is_number_unsigned() || v.get<uint64_t>() > (uint64_t{1} << 40))
      r.fail("geometry.small_gemm_rows",
             fmt::format("{} is not a whole number of rows from 0 to 2^40 (the largest up-projection priced as small); "
                         "leave it out for none",
                         io::json_preview(v)));
    m.geometry.small_gemm_rows = v.get<uint64_t>();
  }
  const json& terms = r.object(doc, "coefficients", "coefficients");
  for (auto it = terms.begin(); it != terms.end(); ++it) {
    bool known = false;
    for (size_t i = 0; i < kTerms; ++i) known = known || it.key() == coefficient_name(static_cast<Term>(i));
    if (!known) r.fail("coefficients." + it.key(), "unknown term; the terms are " + term_list());
  }
  for (size_t i = 0; i < kTerms; ++i) {
    const Term t = static_cast<Term>(i);
    if (optional_term(t) && !terms.contains(coefficient_name(t))) continue;  // 0: a file written before the term
    m.coefficients[i] = r.coefficient(terms, coefficient_name(t));
  }
  if (m.coefficients[static_cast<size_t>(Term::small_gemm_row)] > 0 && m.geometry.small_gemm_rows == 0)
    r.fail("coefficients.per_small_gemm_row_us",
           "priced, but geometry.small_gemm_rows is missing or 0, so no GEMM is small; give the largest small "
           "up-projection's rows there (python -m mlaplan.calibrate writes both)");
  if (doc.contains("host") && !doc["host"].is_null()) m.host = r.host(doc);
  m.heldout_missed = heldout_missed(doc);
  return m;
}

CostModel read_cost_model(const std::string& path) {
  return parse_cost_model(io::read_input_file(path, "a cost file (python -m mlaplan.calibrate writes one)"), path);
}

}  // namespace mlaplan::cost
