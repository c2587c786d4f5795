// Workload presets against their published quantiles (100,000 draws each), the quantile
// distribution they are built from, and the lengths-CSV reader on good and bad files.
// MLAPLAN_WORKLOAD_TABLE=1 prints the claimed-vs-measured rows of docs/workloads.md.
#include <gmock/gmock.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mlaplan/errors.hpp"
#include "mlaplan/workloads/lengths_csv.hpp"
#include "mlaplan/workloads/quantile_distribution.hpp"
#include "mlaplan/workloads/workload.hpp"

namespace mlaplan::workloads {


void PrintTo(const Request& r, std::ostream* os) { *os << "{" << r.cached_tokens << ", " << r.new_tokens << "}"; }

namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr size_t kDraws = 100000;
constexpr uint64_t kSeed = 1;

// numpy.percentile's default (linear interpolation between order statistics), the definition
// the published trace percentiles use.
double empirical_quantile(std::vector<double> sorted_values, double p) {
  const double h = (static_cast<double>(sorted_values.size()) - 1) * p;
  const size_t lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, sorted_values.size() - 1);
  return sorted_values[lo] + (h - static_cast<double>(lo)) * (sorted_values[hi] - sorted_values[lo]);
}

// The 100,000 requests of seed 1 per preset, and their "input", "cached" and "new" columns
// sorted; drawn once for all tests.
struct Drawn {
  std::vector<Request> requests;
  std::map<std::string, std::vector<double>> sorted;
};

const Drawn& drawn(const WorkloadPreset& preset) {
  static std::map<std::string, Drawn> cache;
  auto it = cache.find(preset.name);
  if (it != cache.end()) return it->second;
  Drawn d;
  d.requests = draw_requests(preset, kDraws, kSeed);
  for (const Request& r : d.requests) {
    d.sorted["input"].push_back(double(r.cached_tokens) + double(r.new_tokens));
    d.sorted["cached"].push_back(r.cached_tokens);
    d.sorted["new"].push_back(r.new_tokens);
  }
  for (auto& [what, v] : d.sorted) std::sort(v.begin(), v.end());
  return cache.emplace(preset.name, std::move(d)).first->second;
}

double average(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

bool print_table() {
  const char* env = std::getenv("MLAPLAN_WORKLOAD_TABLE");
  return env != nullptr && std::string(env) == "1";
}

std::string input_error_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

// ---------------------------------------------------------------------------------------------
// QuantileDistribution

TEST(QuantileDistribution, ExactAtItsPoints) {
  const QuantileDistribution d({{0, 3}, {0.01, 17}, {0.5, 1469}, {0.9, 5187.6}, {0.99, 7436}, {1, 7437}});
  for (const auto& [p, v] : d.points()) EXPECT_EQ(d.quantile(p), v) << "p = " << p;
  EXPECT_EQ(d.min(), 3);
  EXPECT_EQ(d.max(), 7437);
  // Every preset's distributions, too.
  for (const WorkloadPreset& w : workload_presets()) {
    for (const auto* opt : {&w.input, &w.cached, &w.new_tokens, &w.response}) {
      if (!*opt) continue;
      for (const auto& [p, v] : (*opt)->points()) EXPECT_EQ((*opt)->quantile(p), v) << w.name << " p = " << p;
    }
  }
}

TEST(QuantileDistribution, LogLinearBetweenPoints) {
  const QuantileDistribution d({{0, 1}, {0.5, 100}, {1, 100}});
  EXPECT_NEAR(d.quantile(0.25), 10, 1e-9);                    // halfway in log between 1 and 100
  EXPECT_NEAR(d.quantile(0.125), std::sqrt(10.0), 1e-9);      // a quarter of the way
  EXPECT_EQ(d.quantile(0.75), 100);                           // a flat piece
  EXPECT_EQ(d.quantile(-0.5), 1);                             // clamped
  EXPECT_EQ(d.quantile(1.5), 100);
  EXPECT_LT(d.quantile(0.3), d.quantile(0.31));               // increasing inside a piece
}

TEST(QuantileDistribution, MeanIsTheIntegralOfTheQuantileFunction) {
  EXPECT_DOUBLE_EQ(QuantileDistribution({{0, 5}, {1, 5}}).mean(), 5);
  EXPECT_NEAR(QuantileDistribution({{0, 1}, {1, std::exp(1.0)}}).mean(), std::exp(1.0) - 1, 1e-12);
  // Against a midpoint sum for every preset distribution.
  for (const WorkloadPreset& w : workload_presets()) {
    for (const auto* opt : {&w.input, &w.cached, &w.new_tokens, &w.response}) {
      if (!*opt) continue;
      const int n = 1000000;
      double sum = 0;
      for (int i = 0; i < n; ++i) sum += (*opt)->quantile((i + 0.5) / n);
      EXPECT_NEAR((*opt)->mean(), sum / n, 1e-3 * (*opt)->mean()) << w.name;
    }
  }
}

TEST(QuantileDistribution, SamplesFollowTheQuantilesAndStayInRange) {
  const QuantileDistribution d({{0, 2}, {0.25, 396}, {0.5, 1020}, {0.9, 2734.5}, {1, 14050}});
  std::mt19937_64 rng(3);
  std::vector<double> v;
  for (size_t i = 0; i < kDraws; ++i) {
    const uint32_t s = d.sample(rng);
    ASSERT_GE(s, 2u);
    ASSERT_LE(s, 14050u);
    v.push_back(s);
  }
  std::sort(v.begin(), v.end());
  for (double p : {0.25, 0.5, 0.9}) EXPECT_NEAR(empirical_quantile(v, p), d.quantile(p), 0.02 * d.quantile(p)) << p;
  EXPECT_NEAR(average(v), d.mean(), 0.02 * d.mean());
}

TEST(QuantileDistribution, Uniform01IsTheTop53BitsOfOneDraw) {
  std::mt19937_64 a(42), b(42);
  for (int i = 0; i < 1000; ++i) {
    const double u = uniform01(a);
    EXPECT_EQ(u, static_cast<double>(b() >> 11) / 9007199254740992.0);
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
}

TEST(QuantileDistribution, RejectsBadPoints) {
  using P = std::vector<std::pair<double, double>>;
  const std::vector<std::pair<P, std::string>> cases = {
      {{{0, 1}}, "1 given"},
      {{{0.1, 1}, {1, 2}}, "the first p is 0.1"},
      {{{0, 1}, {0.9, 2}}, "the last p is 0.9"},
      {{{0, 1}, {0.5, 3}, {0.5, 4}, {1, 5}}, "make p strictly increasing"},
      {{{0, 1}, {0.5, 3}, {1, 2}}, "make the values non-decreasing"},
      {{{0, 0}, {1, 2}}, "values are token counts from 1"},
      {{{0, 1}, {1, 3e9}}, "values are token counts from 1"},
      {{{0, 1}, {0.5, NAN}, {1, 2}}, "not finite"},
  };
  for (const auto& c : cases) {
    const auto& points = c.first;
    const std::string& message = c.second;
    EXPECT_THAT(input_error_message([&] { QuantileDistribution d(points); }), HasSubstr(message));
    EXPECT_THAT(input_error_message([&] { QuantileDistribution d(points); }), StartsWith("quantile points: "));
  }
}

// ---------------------------------------------------------------------------------------------
// Presets

TEST(WorkloadPresets, NamesInOrderWithSourcesAndClaims) {
  std::vector<std::string> names;
  for (const WorkloadPreset& w : workload_presets()) {
    names.push_back(w.name);
    EXPECT_FALSE(w.description.empty()) << w.name;
    EXPECT_THAT(w.source, HasSubstr("http")) << w.name;
    EXPECT_FALSE(w.claims.empty()) << w.name;
    for (const QuantileClaim& c : w.claims) {
      EXPECT_TRUE(c.what == "input" || c.what == "cached" || c.what == "new") << w.name << " " << c.what;
      EXPECT_GT(c.p, 0);
      EXPECT_LT(c.p, 1);
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"azure-code", "azure-conv", "mooncake-conv", "mooncake-synthetic",
                                             "coding-agent", "coding-agent-claude", "short-chat"}));
  EXPECT_EQ(workload_preset_names(),
            "azure-code, azure-conv, mooncake-conv, mooncake-synthetic, coding-agent, coding-agent-claude, short-chat");
}

TEST(WorkloadPresets, FindIsCaseInsensitiveAndNamesTheChoices) {
  EXPECT_EQ(find_workload_preset("Mooncake-Conv").name, "mooncake-conv");
  EXPECT_EQ(find_workload_preset("coding-agent").name, "coding-agent");
  EXPECT_EQ(input_error_message([] { find_workload_preset("sharegpt"); }),
            "--workload sharegpt: unknown workload; choose one of azure-code, azure-conv, mooncake-conv, "
            "mooncake-synthetic, coding-agent, coding-agent-claude, short-chat or give --lengths FILE.csv");
}

// The acceptance test: every published quantile within 5% over 100,000 draws of seed 1.
TEST(WorkloadPresets, EveryClaimedQuantileWithin5PercentOver100000Draws) {
  const bool table = print_table();
  if (table) std::cout << "| preset | tokens | quantile | claimed | measured | difference |\n|---|---|---|---:|---:|---:|\n";
  for (const WorkloadPreset& w : workload_presets()) {
    const Drawn& d = drawn(w);
    for (const QuantileClaim& c : w.claims) {
      const double measured = empirical_quantile(d.sorted.at(c.what), c.p);
      EXPECT_NEAR(measured, c.value, 0.05 * c.value) << w.name << " " << c.what << " p" << c.p * 100;
      if (table)
        std::cout << fmt::format("| {} | {} | p{:g} | {:g} | {:.1f} | {:+.2f}% |\n", w.name, c.what, c.p * 100, c.value,
                                 measured, 100 * (measured - c.value) / c.value);
    }
  }
  if (!table) return;
  std::cout << "\n| preset | mean input | mean cached | mean new | requests with cached > 0 | cached share of tokens |\n"
               "|---|---:|---:|---:|---:|---:|\n";
  for (const WorkloadPreset& w : workload_presets()) {
    const Drawn& d = drawn(w);
    size_t with_cached = 0;
    for (const Request& r : d.requests) with_cached += r.cached_tokens > 0;
    std::cout << fmt::format("| {} | {:.0f} | {:.0f} | {:.0f} | {:.1f}% | {:.1f}% |\n", w.name,
                             average(d.sorted.at("input")), average(d.sorted.at("cached")), average(d.sorted.at("new")),
                             100.0 * static_cast<double>(with_cached) / kDraws,
                             100 * average(d.sorted.at("cached")) / average(d.sorted.at("input")));
  }
  std::cout << "\n| preset | cached p50 / p90 / p99 | new p50 / p90 / p99 | input p50 / p90 / p99 |\n|---|---:|---:|---:|\n";
  for (const WorkloadPreset& w : workload_presets()) {
    const Drawn& d = drawn(w);
    std::cout << "| " << w.name;
    for (const char* what : {"cached", "new", "input"}) {
      const std::vector<double>& v = d.sorted.at(what);
      std::cout << fmt::format(" | {:.0f} / {:.0f} / {:.0f}", empirical_quantile(v, 0.5), empirical_quantile(v, 0.9),
                               empirical_quantile(v, 0.99));
    }
    std::cout << " |\n";
  }
  std::cout << "\n| preset | distribution | published mean | fitted mean | difference |\n|---|---|---:|---:|---:|\n";
  for (const WorkloadPreset& w : workload_presets()) {
    for (const MeanClaim& m : w.means) {
      const auto& dist = m.what == "input" ? w.input : m.what == "cached" ? w.cached : m.what == "new" ? w.new_tokens : w.response;
      std::cout << fmt::format("| {} | {} | {:g} | {:.0f} | {:+.2f}% |\n", w.name, m.what, m.value, dist->mean(),
                               100 * (dist->mean() - m.value) / m.value);
    }
  }
}

TEST(WorkloadPresets, FittedMeansWithin5PercentOfThePublishedMeans) {
  for (const WorkloadPreset& w : workload_presets()) {
    EXPECT_FALSE(w.means.empty()) << w.name;
    for (const MeanClaim& m : w.means) {
      const std::optional<QuantileDistribution>* dist = m.what == "input"    ? &w.input
                                                        : m.what == "cached" ? &w.cached
                                                        : m.what == "new"    ? &w.new_tokens
                                                        : m.what == "response" ? &w.response
                                                                                 : nullptr;
      ASSERT_TRUE(dist != nullptr && dist->has_value()) << w.name << " " << m.what;
      EXPECT_NEAR((*dist)->mean(), m.value, 0.05 * m.value) << w.name << " " << m.what;
    }
  }
}

TEST(WorkloadPresets, TotalsStayBelow2Pow31) {
  for (const WorkloadPreset& w : workload_presets()) {
    EXPECT_LT(w.max_total_tokens(), uint64_t{1} << 31) << w.name;
    for (const Request& r : drawn(w).requests) {
      ASSERT_GE(r.new_tokens, 1u) << w.name;
      ASSERT_LE(uint64_t{r.cached_tokens} + r.new_tokens, w.max_total_tokens()) << w.name;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Draws

TEST(WorkloadDraws, DeterministicForASeed) {
  for (const WorkloadPreset& w : workload_presets()) {
    const std::vector<Request> a = draw_requests(w, 1000, 7);
    EXPECT_EQ(a, draw_requests(w, 1000, 7)) << w.name;
    EXPECT_NE(a, draw_requests(w, 1000, 8)) << w.name;
    // The first 1,000 of a longer run are the same requests.
    const std::vector<Request>& seed1 = drawn(w).requests;
    EXPECT_EQ(draw_requests(w, 1000, kSeed), std::vector<Request>(seed1.begin(), seed1.begin() + 1000)) << w.name;
  }
  // The same numbers on every platform: mt19937_64 and uniform01 are fully specified.
  const std::vector<Request> golden = draw_requests(find_workload_preset("mooncake-conv"), 3, 1);
  EXPECT_EQ(golden, (std::vector<Request>{{0, 1174}, {0, 1191}, {2048, 3529}}));
}

TEST(WorkloadDraws, AzureIsAllNew) {
  for (const char* name : {"azure-code", "azure-conv"}) {
    for (const Request& r : drawn(find_workload_preset(name)).requests) ASSERT_EQ(r.cached_tokens, 0u) << name;
  }
}

TEST(WorkloadDraws, MooncakeCachesTheShareInWhole512TokenBlocks) {
  // The cache ratios of the Mooncake FAST'25 paper, Table 2.
  EXPECT_EQ(find_workload_preset("mooncake-conv").cached_share, 0.40);
  EXPECT_EQ(find_workload_preset("mooncake-synthetic").cached_share, 0.66);
  for (const char* name : {"mooncake-conv", "mooncake-synthetic"}) {
    const WorkloadPreset& w = find_workload_preset(name);
    EXPECT_EQ(w.block_tokens, 512u);
    size_t with_cached = 0;
    for (const Request& r : drawn(w).requests) {
      const uint64_t input = uint64_t{r.cached_tokens} + r.new_tokens;
      ASSERT_EQ(r.cached_tokens % 512, 0u) << name;
      ASSERT_EQ(r.cached_tokens, static_cast<uint64_t>(std::floor(w.cached_share * input / 512)) * 512) << name;
      with_cached += r.cached_tokens > 0;
    }
    EXPECT_GT(with_cached, kDraws / 2) << name;  // most inputs are long enough for a whole block
    // Rounding down to blocks takes at most one block per request off the published share.
    const double share = average(drawn(w).sorted.at("cached")) / average(drawn(w).sorted.at("input"));
    EXPECT_LE(share, w.cached_share) << name;
    EXPECT_GT(share, w.cached_share - 0.05) << name;
  }
}

TEST(WorkloadDraws, CodingAgentsAppendAboutOneKTokensToAHugePrefix) {
  for (const char* name : {"coding-agent", "coding-agent-claude"}) {
    const Drawn& d = drawn(find_workload_preset(name));
    EXPECT_GT(empirical_quantile(d.sorted.at("cached"), 0.5), 100000) << name;
    EXPECT_LT(empirical_quantile(d.sorted.at("new"), 0.5), 1000) << name;
    for (const Request& r : d.requests) ASSERT_GE(r.cached_tokens, 1u) << name;
  }
}

TEST(WorkloadDraws, ShortChatFollowsUpEveryOtherRequest) {
  const WorkloadPreset& w = find_workload_preset("short-chat");
  size_t with_cached = 0;
  for (const Request& r : drawn(w).requests) with_cached += r.cached_tokens > 0;
  EXPECT_NEAR(static_cast<double>(with_cached) / kDraws, w.follow_up_share, 0.01);
  EXPECT_EQ(w.follow_up_share, 0.5);
  // A follow-up's history is a prompt (>= 4 tokens) and a response (>= 1).
  for (const Request& r : drawn(w).requests) {
    if (r.cached_tokens > 0) {
      ASSERT_GE(r.cached_tokens, 5u);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Lengths CSV

std::string data_path(const std::string& name) { return std::string(MLAPLAN_SOURCE_DIR) + "/tests/data/" + name; }

TEST(LengthsCsv, ReadsAGoodFileWithCommentsBlanksQuotesAndSpaces) {
  EXPECT_EQ(read_lengths_csv(data_path("lengths_good.csv")),
            (std::vector<Request>{{0, 512}, {4096, 1}, {131072, 857}, {2147483646, 1}}));
}

TEST(LengthsCsv, ColumnsInEitherOrder) {
  EXPECT_EQ(read_lengths_csv(data_path("lengths_swapped.csv")), (std::vector<Request>{{0, 100}, {65536, 1}}));
}

TEST(LengthsCsv, CrlfByteOrderMarkAndCaseInsensitiveHeader) {
  EXPECT_EQ(parse_lengths_csv("\xEF\xBB\xBF" "Cached_Tokens,NEW_TOKENS\r\n# c\r\n\r\n7,9\r\n1,2", "x.csv"),
            (std::vector<Request>{{7, 9}, {1, 2}}));
  EXPECT_EQ(parse_lengths_csv("\"new_tokens\" , \"cached_tokens\"\n\"5\",\"6\"\n", "x.csv"),
            (std::vector<Request>{{6, 5}}));
}

TEST(LengthsCsv, EveryBadCaseNamesTheLineAndTheColumn) {
  const std::string h = "cached_tokens,new_tokens\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {h + "1,2\nabc,3\n", "x.csv:3: cached_tokens: 'abc' is not a whole number; write digits only"},
      {h + "1.5,3\n", "x.csv:2: cached_tokens: '1.5' is not a whole number"},
      {h + "1,1e3\n", "x.csv:2: new_tokens: '1e3' is not a whole number"},
      {h + "1,+3\n", "x.csv:2: new_tokens: '+3' is not a whole number"},
      {h + "1,2\n\n-4,3\n", "x.csv:4: cached_tokens: -4 is negative; write a whole number of tokens, 0 or more"},
      {h + "4,-3\n", "x.csv:2: new_tokens: -3 is negative; write a whole number of tokens, 1 or more"},
      {h + "-0,3\n", "x.csv:2: cached_tokens: -0 has a sign; write a whole number of tokens, 0 or more"},  // not "negative"
      {h + "4,0\n", "x.csv:2: new_tokens: 0; every request needs at least 1 new token"},
      {h + ",3\n", "x.csv:2: cached_tokens: empty; write a whole number of tokens, 0 or more"},
      {h + "5\n", "x.csv:2: new_tokens: missing; write two values per row (cached_tokens,new_tokens)"},
      {"new_tokens,cached_tokens\n5\n", "x.csv:2: cached_tokens: missing; write two values per row (new_tokens,cached_tokens)"},
      {h + "5,6,7\n", "x.csv:2: column 3: extra value '7'; write exactly two values per row"},
      {h + "5,6,\n", "x.csv:2: column 3: extra value ''"},
      {h + "4294967296,1\n", "x.csv:2: cached_tokens: 4294967296 is too large; at most 2147483647 tokens"},
      {h + "2147483647,1\n", "x.csv:2: cached_tokens + new_tokens: 2147483647 + 1 = 2147483648; keep a request's total below 2^31"},
      {h + "\"5,6\n", "x.csv:2: column 1: the quoted field has no closing quote"},
      {h + "\"5\"x,6\n", "x.csv:2: column 1: text after the closing quote ('x,6')"},
      {"# lengths\n100,20\n", "x.csv:2: header: the first row is data ('100'), not the header; add the line cached_tokens,new_tokens above it"},
      {"cached,new\n1,2\n", "x.csv:1: column 1: 'cached' is not a column of a lengths file"},
      {"cached_tokens,new_tokens,timestamp\n1,2,3\n", "x.csv:1: column 3: 'timestamp' is not a column of a lengths file"},
      {"cached_tokens,cached_tokens\n1,2\n", "x.csv:1: column 2: 'cached_tokens' appears twice"},
      {"\n# only one column\nnew_tokens\n1\n", "x.csv:3: cached_tokens: missing from the header; write the header cached_tokens,new_tokens"},
  };
  for (const auto& c : cases) {
    const std::string& text = c.first;
    EXPECT_THAT(input_error_message([&] { parse_lengths_csv(text, "x.csv"); }), StartsWith(c.second)) << text;
  }
}

TEST(LengthsCsv, NoRowsAtAll) {
  for (const std::string text : {"", "\n\n", "# nothing\n", "cached_tokens,new_tokens\n", "cached_tokens,new_tokens\n# later\n\n"}) {
    EXPECT_EQ(input_error_message([&] { parse_lengths_csv(text, "x.csv"); }),
              "x.csv: no requests; add rows of cached_tokens,new_tokens")
        << text;
  }
}

TEST(LengthsCsv, FilesThatCannotBeRead) {
  const std::string bad = data_path("lengths_bad_negative.csv");
  EXPECT_EQ(input_error_message([&] { read_lengths_csv(bad); }),
            bad + ":4: cached_tokens: -5 is negative; write a whole number of tokens, 0 or more");
  EXPECT_THAT(input_error_message([] { read_lengths_csv("/nonexistent/lengths.csv"); }),
              StartsWith("/nonexistent/lengths.csv: no such file; "));
  EXPECT_THAT(input_error_message([] { read_lengths_csv(MLAPLAN_SOURCE_DIR "/tests/data"); }), HasSubstr(": is a folder; "));
}

}  // namespace
}  // namespace mlaplan::workloads
