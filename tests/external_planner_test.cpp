// The external planner protocol's two lines (docs/external.md), without a process.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <climits>

#include "mlaplan/errors.hpp"
#include "mlaplan/check/external_planner.hpp"
#include "mlaplan/profile/external_process.hpp"
#include "mlaplan/reference_planner.hpp"
#include "test_batches.hpp"

using namespace mlaplan;

namespace {

Batch worked_example() { return mlaplan::test::worked_example_batch(); }

std::string tables_line(const PlanTables& t) {
  std::string line = "tables";
  for (uint32_t v : t.buffer_row_offsets) line += " " + std::to_string(v);
  for (uint32_t v : t.cache_offsets) line += " " + std::to_string(v);
  for (int32_t v : t.buffer_lengths) line += " " + std::to_string(v);
  return line;
}

std::string device_error(const std::string& line, const Batch& b) {
  try {
    check::parse_external_answer(line, b);
  } catch (const DeviceError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(ExternalProtocol, RequestLine) {
  EXPECT_EQ(check::external_request_line(worked_example()), "plan 128 512 4 3 500 0 100 0 9 209 229\n");
  Batch empty;
  empty.input_row_offsets = {7};
  EXPECT_EQ(check::external_request_line(empty), "plan 1 1 1 0 7\n");
}

TEST(ExternalProtocol, TablesRoundTrip) {
  const Batch b = worked_example();
  const PlanTables ref = plan_reference(b);
  EXPECT_EQ(check::parse_external_answer(tables_line(ref), b), ref);
  EXPECT_EQ(check::parse_external_answer(tables_line(ref) + " \r", b), ref);  // trailing blanks and a CR are fine
}

TEST(ExternalProtocol, RefusalsCarryTheirMinimum) {
  const Batch b = worked_example();
  try {
    check::parse_external_answer("infeasible 7", b);
    FAIL();
  } catch (const InfeasibleBatch& e) {
    EXPECT_EQ(e.min_max_chunks(), 7u);
  }
  try {
    check::parse_external_answer("infeasible", b);
    FAIL();
  } catch (const InfeasibleBatch& e) {
    EXPECT_EQ(e.min_max_chunks(), 0u);  // not stated
  }
}

TEST(ExternalProtocol, MalformedAnswersSayWhatIsWrong) {
  const Batch b = worked_example();
  const std::string good = tables_line(plan_reference(b));
  EXPECT_NE(device_error("", b).find("starts with tables, infeasible or error, not ''"), std::string::npos);
  EXPECT_NE(device_error("plan 1 2", b).find("not 'plan'"), std::string::npos);
  EXPECT_NE(device_error("tables 1 2 3", b).find("tables holds 3 numbers; 32"), std::string::npos);
  EXPECT_NE(device_error(good + " 5", b).find("more than the 32 numbers"), std::string::npos);
  EXPECT_NE(device_error("tables 1 x 3", b).find("'x' is not an integer"), std::string::npos);
  EXPECT_NE(device_error("tables 1 2a 3", b).find("'2a' is not an integer"), std::string::npos);
  EXPECT_NE(device_error("tables -1", b).find("buffer_row_offsets value -1 is out of range"), std::string::npos);
  EXPECT_NE(device_error("tables 99999999999", b).find("out of range"), std::string::npos);
  EXPECT_NE(device_error("error the GPU is on fire", b).find("error: the GPU is on fire"), std::string::npos);
  EXPECT_NE(device_error("infeasible -2", b).find("negative"), std::string::npos);
}

TEST(ExternalProtocol, TheLongestPlanAnswerFitsItsBound) {
  // Every cell at its widest: the bound must admit it, and stay within the short-answer room of it.
  Batch b = worked_example();
  PlanTables widest(b.batch_size(), b.max_chunks);
  std::fill(widest.buffer_row_offsets.begin(), widest.buffer_row_offsets.end(), UINT32_MAX);
  std::fill(widest.cache_offsets.begin(), widest.cache_offsets.end(), UINT32_MAX);
  std::fill(widest.buffer_lengths.begin(), widest.buffer_lengths.end(), INT32_MIN);
  const std::string line = tables_line(widest);
  EXPECT_EQ(check::max_plan_answer_bytes(b), line.size() + profile::ExternalProcess::kShortAnswerBytes);
  EXPECT_EQ(check::parse_external_answer(line + "\r", b).buffer_lengths.size(), 4u);
}

TEST(ExternalProcessLines, ALineLongerThanItsBoundIsCutOffAtOnce) {
  profile::ExternalProcess p("read l; head -c 50000000 /dev/zero | tr '\\0' 1; echo");
  const auto start = std::chrono::steady_clock::now();
  try {
    p.ask("plan\n", 30, "(test)", 1000);
    FAIL() << "no error";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("sent an answer line of more than 1000 bytes"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 3.0);
}

TEST(ExternalProcessLines, AnAnswerSplitOverReadsComesBackWhole) {
  profile::ExternalProcess p("while read l; do printf 'a b'; sleep 0.05; printf ' c\\n'; done");
  EXPECT_EQ(p.ask("x\n", 5, "(test)"), "a b c");
  EXPECT_EQ(p.ask("y\n", 5, "(test)"), "a b c");
}
