#include "mlaplan/check/verify_report.hpp"

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>

#include "mlaplan/profile/json_text.hpp"

namespace mlaplan::check {

uint64_t VerifyRun::failed() const {
  uint64_t n = 0;
  for (const auto& c : cases) n += c.passed ? 0 : 1;
  return n;
}

std::string format_verify_json(const VerifyRun& run) {
  nlohmann::json j;
  j["backend"] = run.backend;
  j["planners"] = run.planners;
  j["seed"] = run.seed ? nlohmann::json(*run.seed) : nlohmann::json(nullptr);
  j["fuzz"] = run.fuzz;
  j["passed"] = run.cases.size() - run.failed();
  j["failed"] = run.failed();
  j["wall_seconds"] = run.wall_seconds;
  nlohmann::json cases = nlohmann::json::array();
  for (const auto& c : run.cases) {
    nlohmann::json o{{"group", c.group},
                     {"name", c.name},
                     {"planner", c.planner},
                     {"status", c.passed ? "pass" : "fail"},
                     {"outcome", c.refused ? "refused" : "planned"},
                     {"timings_us", {{"plan", c.plan_us}, {"check", c.check_us}}}};
    if (!c.shape.empty()) o["shape"] = c.shape;
    if (!c.detail.empty()) o["detail"] = c.detail;
    if (!c.reproducer.empty()) o["reproducer"] = c.reproducer;
    cases.push_back(std::move(o));
  }
  j["cases"] = std::move(cases);
  return profile::json_text(j, 1) + "\n";
}

namespace {

std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 allows no control characters but tab, newline and carriage return.
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') {
          out += ' ';
        } else {
          out += ch;
        }
    }
  }
  return out;
}

}  // namespace

std::string format_verify_junit(const VerifyRun& run) {
  // Groups in order of first appearance.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const VerifyCaseRecord*>> groups;
  for (const auto& c : run.cases) {
    if (!groups.count(c.group)) order.push_back(c.group);
    groups[c.group].push_back(&c);
  }
  fmt::memory_buffer out;
  auto put = [&](auto&&... args) { fmt::format_to(std::back_inserter(out), std::forward<decltype(args)>(args)...); };
  put("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  put("<testsuites name=\"mlaplan verify\" tests=\"{}\" failures=\"{}\" time=\"{:.6f}\">\n", run.cases.size(), run.failed(),
      run.wall_seconds);
  for (const auto& g : order) {
    const auto& cases = groups[g];
    uint64_t failures = 0;
    double seconds = 0;
    for (const auto* c : cases) {
      failures += c->passed ? 0 : 1;
      seconds += (c->plan_us + c->check_us) * 1e-6;
    }
    put("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" time=\"{:.6f}\">\n", xml_escape(g),
        cases.size(), failures, seconds);
    for (const auto* c : cases) {
      put("    <testcase classname=\"{}\" name=\"{}\" time=\"{:.6f}\"", xml_escape(g),
          xml_escape(c->name + " [" + c->planner + "]"), (c->plan_us + c->check_us) * 1e-6);
      if (c->passed) {
        put("/>\n");
      } else {
        put(">\n      <failure message=\"{}\">{}{}</failure>\n    </testcase>\n", xml_escape(c->detail),
            xml_escape(c->detail), c->reproducer.empty() ? "" : xml_escape("\nreproducer: " + c->reproducer));
      }
    }
    put("  </testsuite>\n");
  }
  put("</testsuites>\n");
  return fmt::to_string(out);
}

}  // namespace mlaplan::check
