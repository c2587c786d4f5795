// The NVTX ranges of run and bench, seen by a real NVTX tool: the injection library
// nvtx_recorder_injection.cpp, loaded through NVTX_INJECTION64_PATH, logs every push and pop.
// Checks that all ranges are in the mlaplan domain, balanced, and nested as a timeline should read.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"

using mlaplan::test::run_cli;
namespace fs = std::filesystem;

namespace {

struct Range {
  std::string name;
  std::vector<Range> children;
  const Range* child(const std::string& n) const {
    for (const Range& c : children)
      if (c.name == n) return &c;
    return nullptr;
  }
};

// Runs mlaplan under the recorder and rebuilds the tree of ranges; fails on any imbalance.
std::vector<Range> record(const std::string& args) {
  const fs::path log = fs::temp_directory_path() / ("mlaplan_nvtx_" + std::to_string(::getpid()) + ".log");
  fs::remove(log);
  const auto r = run_cli(args, std::string("NVTX_INJECTION64_PATH=") + NVTX_RECORDER + " MLAPLAN_NVTX_LOG=" + log.string());
  EXPECT_EQ(r.code, 0) << r.err;
  std::ifstream in(log);
  EXPECT_TRUE(in.good()) << "the recorder wrote nothing: NVTX did not load it";
  std::vector<Range> roots;
  std::vector<Range> stack;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string what, domain, name;
    std::getline(fields, what, '\t');
    std::getline(fields, domain, '\t');
    std::getline(fields, name);
    EXPECT_EQ(domain, "mlaplan") << line;
    if (what == "push") {
      stack.push_back({name, {}});
    } else {
      EXPECT_EQ(what, "pop") << line;
      if (stack.empty()) {
        ADD_FAILURE() << "a pop without a push";
        continue;
      }
      Range done = std::move(stack.back());
      stack.pop_back();
      (stack.empty() ? roots : stack.back().children).push_back(std::move(done));
    }
  }
  EXPECT_TRUE(stack.empty()) << stack.size() << " ranges never popped, innermost " << (stack.empty() ? "" : stack.back().name);
  fs::remove(log);
  return roots;
}

}  // namespace

TEST(NvtxRanges, RunNestsEveryPhaseUnderOneRoot) {
  const auto roots = record("run " MLAPLAN_SOURCE_DIR "/scenarios/worked-example.json --backend cpu -o /dev/null");
  ASSERT_EQ(roots.size(), 1u);
  const Range& run = roots[0];
  EXPECT_EQ(run.name, "mlaplan run");
  std::vector<std::string> names;
  for (const Range& c : run.children) names.push_back(c.name);
  // In the order they happen: load the file, plan, check, then format and write the output.
  const std::vector<std::string> in_order = {"load", "plan", "check", "format", "write"};
  size_t at = 0;
  for (const std::string& n : names)
    if (at < in_order.size() && n == in_order[at]) ++at;
  EXPECT_EQ(at, in_order.size()) << "phases seen: " << ::testing::PrintToString(names);
}

TEST(NvtxRanges, BenchNestsMeasurementsUnderTheirSize) {
  const auto roots = record("bench --sizes 1,16 --kernels cpu,cpu-fast --mode hot --max-time 0.01 --min-samples 3 -o /dev/null");
  ASSERT_EQ(roots.size(), 1u);
  const Range& bench = roots[0];
  EXPECT_EQ(bench.name, "mlaplan bench");
  for (const char* size : {"size 1", "size 16"}) {
    const Range* s = bench.child(size);
    ASSERT_NE(s, nullptr) << size;
    EXPECT_NE(s->child("inputs"), nullptr);
    EXPECT_NE(s->child("reference"), nullptr);
    for (const char* kernel : {"cpu hot", "cpu-fast hot"}) {
      const Range* k = s->child(kernel);
      ASSERT_NE(k, nullptr) << size << " > " << kernel;
      EXPECT_NE(k->child("check"), nullptr) << "every plan is checked before it is timed";
      EXPECT_NE(k->child("measure"), nullptr);
    }
  }
  EXPECT_NE(bench.child("format"), nullptr);
  EXPECT_NE(bench.child("write"), nullptr);
}
