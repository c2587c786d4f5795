// Fixtures of the sweep chart's tests (sweep_svg_test.cpp, sweep_svg_time_test.cpp): an SVG's
// titles and tooltips, a well-formedness check without a parser library, and hand-made sweep rows.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include "mlaplan/sweeps/recommend.hpp"
#include "mlaplan/sweeps/sweep.hpp"
#include "mlaplan/sweeps/sweep_format.hpp"
#include "svg_checks.hpp"

namespace mlaplan::render::sweep_fixtures {

// The names both test files use, brought in with the fixtures by `using namespace sweep_fixtures`.
using policies::Policy;
using policies::PolicyKind;
using sweeps::RecommendOptions;
using sweeps::SweepReport;
using sweeps::SweepResult;
using sweeps::SweepRow;
using mlaplan::test::clean_utf8;
using mlaplan::test::count;
using mlaplan::test::parser_accepts;

// The text of every <title> element, in document order.
inline std::vector<std::string> titles(const std::string& svg) {
  std::vector<std::string> out;
  for (size_t at = svg.find("<title>"); at != std::string::npos; at = svg.find("<title>", at + 1)) {
    const size_t end = svg.find("</title>", at);
    if (end == std::string::npos) break;
    out.push_back(svg.substr(at + 7, end - at - 7));
  }
  return out;
}

// The tooltips among `tips` that start with the row's setting (a point's first line).
inline std::vector<std::string> tips_for(const std::vector<std::string>& tips, const SweepRow& r) {
  std::vector<std::string> out;
  for (const std::string& t : tips)
    if (t.rfind(r.setting() + "\n", 0) == 0) out.push_back(t);
  return out;
}

// Well-formed XML, checked without a parser library: every tag closes in order, attribute values are
// quoted, and '<' and '&' appear in text only as markup or entities. Returns "" or what is wrong.
inline std::string xml_problem(const std::string& s) {
  std::vector<std::string> open;
  size_t i = 0;
  if (s.compare(0, 5, "<?xml") == 0) i = s.find("?>") + 2;
  bool root_seen = false;
  while (i < s.size()) {
    if (s[i] == '&') {
      const size_t semi = s.find(';', i);
      const std::string entity = semi == std::string::npos ? "" : s.substr(i, semi - i + 1);
      if (entity != "&amp;" && entity != "&lt;" && entity != "&gt;" && entity != "&quot;" && entity != "&#39;")
        return "a bare & at " + std::to_string(i);
      i = semi + 1;
      continue;
    }
    if (s[i] != '<') {
      if (open.empty() && s[i] != '\n') return "text outside the root at " + std::to_string(i);
      ++i;
      continue;
    }
    const bool closing = i + 1 < s.size() && s[i + 1] == '/';
    size_t j = i + (closing ? 2 : 1);
    const size_t name_start = j;
    while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '-' || s[j] == ':')) ++j;
    const std::string name = s.substr(name_start, j - name_start);
    if (name.empty()) return "a '<' that starts no tag at " + std::to_string(i);
    bool self_close = false;
    for (;;) {  // attributes, each name="value" with no '<' inside the value
      while (j < s.size() && s[j] == ' ') ++j;
      if (j >= s.size()) return "an unterminated tag <" + name;
      if (s[j] == '>') break;
      if (s[j] == '/' && j + 1 < s.size() && s[j + 1] == '>') {
        self_close = true;
        ++j;
        break;
      }
      const size_t eq = s.find('=', j);
      if (eq == std::string::npos || eq + 1 >= s.size() || s[eq + 1] != '"') return "an unquoted attribute in <" + name;
      const size_t close_quote = s.find('"', eq + 2);
      if (close_quote == std::string::npos) return "an unterminated attribute in <" + name;
      const std::string value = s.substr(eq + 2, close_quote - eq - 2);
      if (value.find('<') != std::string::npos) return "a '<' inside an attribute of <" + name;
      j = close_quote + 1;
    }
    if (closing) {
      if (open.empty() || open.back() != name) return "</" + name + "> closes nothing open";
      open.pop_back();
    } else if (!self_close) {
      if (open.empty() && root_seen) return "a second root element <" + name;
      open.push_back(name);
      root_seen = true;
    }
    i = j + 1;
  }
  if (!open.empty()) return "<" + open.back() + "> never closes";
  return root_seen ? "" : "no root element";
}

inline void expect_valid_svg(const std::string& svg) {
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_NE(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  if (const std::optional<bool> ok = parser_accepts(svg)) {
    EXPECT_TRUE(*ok) << "the XML parser rejects the SVG";
  }
  EXPECT_EQ(svg.find("nan"), std::string::npos);  // no NaN or infinite coordinate made it out
  EXPECT_EQ(svg.find("inf"), std::string::npos);
}

inline Policy policy(PolicyKind kind) {
  Policy p;
  p.kind = kind;
  return p;
}

inline SweepRow row(PolicyKind kind, uint32_t n, uint32_t p99, double mean, uint64_t refused = 0) {
  SweepRow r;
  r.policy = policy(kind);
  r.buffer_tokens = n;
  if (kind == PolicyKind::max) r.max_chunks = 16;
  r.batches = 400;
  r.mean_iterations = mean;
  r.p50 = p99 / 2;
  r.p90 = p99 - p99 / 4;
  r.p99 = p99;
  r.max_iterations = p99 + 3;
  r.refused = refused;
  if (refused) r.first_refusal = "max: the batch needs 19 chunks but max_chunks is 16";
  r.mean_fill = 0.8;
  r.iterations.assign(r.batches, p99);
  return r;
}

// max and packed over four buffers, max refusing at the two smallest: two groups, eight rows.
inline SweepResult two_policies() {
  SweepResult s;
  s.source = "workload coding-agent (seed 1)";
  s.formation = "a budget of 8192 new tokens per step";
  s.batches = 400;
  const uint32_t sizes[] = {4096, 16384, 65536, 1048576};
  const uint32_t p99s[] = {40, 10, 3, 1};
  for (PolicyKind kind : {PolicyKind::max, PolicyKind::packed})
    for (int i = 0; i < 4; ++i)
      s.rows.push_back(row(kind, sizes[i], p99s[i] + (kind == PolicyKind::max ? 1 : 0), p99s[i] * 0.6,
                           kind == PolicyKind::max && i < 2 ? 100 : 0));
  s.settings = s.rows.size();
  return s;
}

}  // namespace mlaplan::render::sweep_fixtures
