// verify's checking core against deliberately wrong planners: each must be caught with the exact
// cell named, and the shrunk reproducer must still fail.
#include <gtest/gtest.h>

#include <atomic>

#include "mlaplan/check/batch_generator.hpp"
#include "mlaplan/check/builtin_suite.hpp"
#include "mlaplan/check/case_check.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/check/property_check.hpp"
#include "mlaplan/reference_planner.hpp"
#include "mlaplan/io/scenario_io.hpp"
#include "mlaplan/check/shrink.hpp"
#include "mlaplan/profile/stop_request.hpp"
#include "mlaplan/check/verify_report.hpp"

using namespace mlaplan;

namespace {

// The reference with one cell of buffer_row_offsets corrupted: chunk 1, the last column before the sentinel.
class CorruptOneCell final : public profile::Planner {
 public:
  std::string name() const override { return "corrupt-one-cell"; }
  std::string backend() const override { return "cpu"; }
  PlanTables plan(const Batch& b, profile::PhaseTimer&) override {
    PlanTables t = plan_reference(b);
    if (t.max_chunks > 1 && t.batch_size > 0) t.row_offset(1, t.batch_size - 1) += 7;
    return t;
  }
};

// Forgets the page padding: plans as if the page size were 1.
class DropsPagePadding final : public profile::Planner {
 public:
  std::string name() const override { return "drops-padding"; }
  std::string backend() const override { return "cpu"; }
  PlanTables plan(const Batch& b, profile::PhaseTimer&) override {
    Batch unpadded = b;
    unpadded.page_size = 1;
    return plan_reference(unpadded);
  }
};

// Like the seed: never refuses, silently planning what fits.
class NeverRefuses final : public profile::Planner {
 public:
  std::string name() const override { return "never-refuses"; }
  std::string backend() const override { return "cpu"; }
  PlanTables plan(const Batch& b, profile::PhaseTimer&) override {
    Batch roomy = b;
    roomy.max_chunks = static_cast<uint32_t>(plan_shape(b).min_max_chunks);
    PlanTables t = plan_reference(roomy);
    t.max_chunks = b.max_chunks;
    t.buffer_row_offsets.resize(size_t{b.max_chunks} * (b.batch_size() + 1));
    t.cache_offsets.resize(size_t{b.max_chunks} * b.batch_size());
    t.buffer_lengths.resize(b.max_chunks);
    return t;
  }
};

check::Scenario worked() { return check::builtin_edge_cases().front(); }

}  // namespace

TEST(Verify, TheReferencePassesEveryBuiltInCase) {
  auto ref = profile::make_reference_planner();
  auto fast = profile::make_fast_cpu_planner();
  for (const check::Scenario& s : check::builtin_edge_cases()) {
    profile::PhaseTimer t;
    EXPECT_TRUE(check::check_case(s, *ref, t).passed) << s.name << ": " << check::check_case(s, *ref, t).detail;
    EXPECT_TRUE(check::check_case(s, *fast, t).passed) << s.name << ": " << check::check_case(s, *fast, t).detail;
  }
}

TEST(Verify, ACorruptedCellIsNamedExactly) {
  CorruptOneCell bad;
  profile::PhaseTimer t;
  const check::CaseResult r = check::check_case(worked(), bad, t);
  ASSERT_FALSE(r.passed);
  EXPECT_EQ(r.detail.rfind("chunk 1, sequence 2: buffer_row_offsets expected 256, got 263", 0), 0u) << r.detail;
  ASSERT_TRUE(r.diff);
  EXPECT_EQ(r.diff->buffer_row_offsets, 1u);
  EXPECT_EQ(r.diff->cache_offsets, 0u);
  EXPECT_EQ(r.diff->buffer_lengths, 0u);
}

TEST(Verify, DroppedPaddingIsCaughtAndShrunkToAFailingReproducer) {
  DropsPagePadding bad;
  check::BatchGenerator gen(11, {64, 64, 64, false});
  int caught = 0;
  for (int i = 0; i < 200 && caught < 5; ++i) {
    check::Scenario s;
    s.name = "case";
    s.batch = gen.next();
    profile::PhaseTimer t;
    const check::CaseResult r = check::check_case(s, bad, t);
    if (r.passed) continue;  // page size 1, or lengths already page multiples
    ++caught;
    auto fails = [&](const check::Scenario& c) {
      profile::PhaseTimer scratch;
      return !check::check_case(c, bad, scratch).passed;
    };
    const check::Scenario small = check::shrink_scenario(s, fails);
    EXPECT_TRUE(fails(small));
    EXPECT_LE(small.batch.batch_size(), 1u) << "one unpadded sequence is enough to fail";
    EXPECT_LE(small.batch.batch_size(), s.batch.batch_size());
    // The reproducer survives a round trip through the scenario format and still fails.
    const check::Scenario back = io::parse_scenarios(io::scenario_to_json(small), "repro.json", "repro")[0];
    EXPECT_TRUE(fails(back));
  }
  EXPECT_EQ(caught, 5);
}

TEST(Verify, PlanningAnInfeasibleBatchIsCaught) {
  NeverRefuses bad;
  check::Scenario s = worked();
  s.expected.reset();
  s.batch.max_chunks = 1;
  profile::PhaseTimer t;
  const check::CaseResult r = check::check_case(s, bad, t);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.detail.find("produced a plan for an infeasible batch (it needs max_chunks >= 2, has 1)"), std::string::npos)
      << r.detail;
}

TEST(Verify, RefusalsMustAgreeOnTheMinimum) {
  check::Scenario s = worked();
  s.expected.reset();
  s.batch.max_chunks = 1;
  profile::PhaseTimer t;
  EXPECT_TRUE(check::check_tables(s, std::nullopt, t).passed);  // refused, minimum not stated
  s.batch.max_chunks = 4;
  const check::CaseResult r = check::check_tables(s, std::nullopt, t);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.detail.find("refused a feasible batch"), std::string::npos) << r.detail;
}

TEST(Verify, APlanFilesRefusalIsJudgedWithItsStatedMinimum) {
  check::Scenario s = worked();
  s.expected.reset();
  s.batch.max_chunks = 1;  // needs 2
  profile::PhaseTimer t;
  check::PlanClaims claims;
  EXPECT_TRUE(check::check_plan_claims(s, std::nullopt, claims, t).passed);
  claims.min_max_chunks = 2;
  EXPECT_TRUE(check::check_plan_claims(s, std::nullopt, claims, t).passed);
  claims.min_max_chunks = 1;
  const check::CaseResult r = check::check_plan_claims(s, std::nullopt, claims, t);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.detail.find("asking for max_chunks >= 1; the smallest that fits is 2"), std::string::npos) << r.detail;
}

TEST(Verify, APlanFilesCountsAndEchoAreCompared) {
  const check::Scenario s = worked();
  const PlanTables ref = plan_reference(s.batch);
  profile::PhaseTimer t;
  check::PlanClaims right;
  right.chunks_used = 2;
  right.padded_tokens = 896;
  right.input_tokens = 829;
  right.batch_size = 3;
  right.page_size = 128;
  right.buffer_token_size = 512;
  right.max_chunks = 4;
  right.min_max_chunks = 2;
  EXPECT_TRUE(check::check_plan_claims(s, ref, right, t).passed) << check::check_plan_claims(s, ref, right, t).detail;
  check::PlanClaims wrong = right;
  wrong.padded_tokens = 895;
  EXPECT_EQ(check::check_plan_claims(s, ref, wrong, t).detail, "padded_tokens: the file says 895, the right value is 896");
  wrong = right;
  wrong.chunks_used = 3;
  EXPECT_EQ(check::check_plan_claims(s, ref, wrong, t).detail, "chunks_used: the file says 3, the right value is 2");
  // The echo is compared first: tables for another batch.
  wrong.max_chunks = 5;
  EXPECT_EQ(check::check_plan_claims(s, ref, wrong, t).detail, "max_chunks: the file says 5, the scenario has 4");
}

TEST(Verify, JunitCountsCasesAndFailures) {
  check::VerifyRun run;
  run.cases.push_back({"g1", "a", "", "p", true, false, "", "", 1, 1});
  run.cases.push_back({"g1", "b<&>", "", "p", false, false, "chunk 0: buffer_lengths expected 1, got \"2\"", "r.json", 1, 1});
  run.cases.push_back({"g2", "c", "", "p", true, false, "", "", 1, 1});
  const std::string xml = check::format_verify_junit(run);
  EXPECT_NE(xml.find("<testsuites name=\"mlaplan verify\" tests=\"3\" failures=\"1\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("name=\"b&lt;&amp;&gt; [p]\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("got &quot;2&quot;"), std::string::npos) << xml;
  EXPECT_EQ(run.failed(), 1u);
}

// A planner built for fixed page sizes and max_chunks (as MAX's kernel is) sees only batches it admits.
TEST(BatchLimits, TheGeneratorDrawsOnlyAdmittedBatchesAndKeepsEveryKind) {
  check::BatchGeneratorOptions options;
  options.limits = check::BatchLimits::of({128, 16, 16, 1024}, {16, 1, 4, 2});
  EXPECT_EQ(options.limits.page_sizes, (std::vector<uint32_t>{16, 128, 1024}));
  EXPECT_EQ(options.limits.max_chunks, (std::vector<uint32_t>{1, 2, 4, 16}));
  check::BatchGenerator gen(3, options);
  size_t feasible = 0, infeasible = 0, at_capacity = 0, empty = 0, huge_feasible = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string shape;
    const Batch b = gen.next(&shape);
    ASSERT_NO_THROW(validate_batch(b)) << shape;
    ASSERT_TRUE(options.limits.admits(b)) << shape << ": P=" << b.page_size << " M=" << b.max_chunks;
    const PlanShape s = plan_shape(b);
    (s.feasible ? feasible : infeasible) += 1;
    if (s.feasible && s.min_max_chunks == b.max_chunks) ++at_capacity;
    if (b.batch_size() == 0) ++empty;
    if (shape == "huge-sequence" && s.feasible) ++huge_feasible;
    EXPECT_NE(shape, "page-size-1") << "no page size 1 is allowed";
  }
  EXPECT_GT(feasible, 3000u);
  EXPECT_GT(infeasible, 100u);  // the past-capacity shape still refuses
  EXPECT_GT(at_capacity, 500u);
  EXPECT_GT(empty, 50u);
  EXPECT_GT(huge_feasible, 100u) << "a sequence needing more than 16 chunks gets a wider buffer";
}

TEST(BatchLimits, NoLimitsLeaveTheGeneratorAsItWas) {
  check::BatchGenerator plain(17), limited(17, check::BatchGeneratorOptions{});
  for (int i = 0; i < 300; ++i) {
    const Batch a = plain.next(), b = limited.next();
    ASSERT_EQ(a.page_size, b.page_size);
    ASSERT_EQ(a.max_chunks, b.max_chunks);
    ASSERT_EQ(a.cache_lengths, b.cache_lengths);
  }
}

TEST(BatchLimits, ShrinkingKeepsToTheLimits) {
  DropsPagePadding bad;
  const check::BatchLimits limits = check::BatchLimits::of({16, 128}, {2, 16});
  check::BatchGeneratorOptions options{64, 64, 64, false};
  options.limits = limits;
  check::BatchGenerator gen(11, options);
  int caught = 0;
  for (int i = 0; i < 300 && caught < 5; ++i) {
    check::Scenario s;
    s.name = "case";
    s.batch = gen.next();
    profile::PhaseTimer t;
    if (check::check_case(s, bad, t).passed) continue;
    ++caught;
    size_t outside = 0;
    auto fails = [&](const check::Scenario& c) {
      outside += !limits.admits(c.batch);
      profile::PhaseTimer scratch;
      return !check::check_case(c, bad, scratch).passed;
    };
    const check::Scenario small = check::shrink_scenario(s, fails, 4000, limits);
    EXPECT_EQ(outside, 0u) << "a candidate outside the limits was tried";
    EXPECT_TRUE(limits.admits(small.batch));
    EXPECT_EQ(small.batch.page_size, 16u) << "the smallest allowed page size";
    EXPECT_EQ(small.batch.max_chunks, 2u) << "the smallest allowed max_chunks";
    EXPECT_TRUE(fails(small));
  }
  EXPECT_EQ(caught, 5);
}

// The bound verify checks --memory-limit against: no batch the generator draws has larger
// tables than most_batch_size x most_chunk_rows, with and without limits, for small and large B.
TEST(BatchLimits, TheGeneratorsTablesStayWithinItsStatedBound) {
  std::vector<check::BatchGeneratorOptions> all;
  all.push_back({});
  all.push_back({8, 20000, 4096, true, {}});
  check::BatchGeneratorOptions limited{64, 5000, 4096, true, check::BatchLimits::of({1, 16, 1024}, {1, 3, 64, 200})};
  all.push_back(limited);
  limited.limits = check::BatchLimits::of({128}, {2, 5});  // every allowed M below what the large shape may need
  all.push_back(limited);
  for (size_t k = 0; k < all.size(); ++k) {
    const check::BatchGeneratorOptions& o = all[k];
    const uint64_t bound = std::max(table_bytes(check::most_batch_size(o, false), check::most_chunk_rows(o, false)),
                                    table_bytes(check::most_batch_size(o, true), check::most_chunk_rows(o, true)));
    check::BatchGenerator gen(k + 1, o);
    for (int i = 0; i < 1500; ++i) {
      std::string shape;
      const Batch b = gen.next(&shape);
      ASSERT_LE(table_bytes(b), bound) << "options " << k << ", " << shape << ": B=" << b.batch_size() << " M=" << b.max_chunks;
    }
  }
  EXPECT_EQ(table_bytes(3, 4), 8u * 4 * 4);
  EXPECT_EQ(table_bytes(0, 1), 8u);
  EXPECT_EQ(table_bytes(uint64_t{1} << 40, uint64_t{1} << 40), UINT64_MAX);  // saturates
}

// Ctrl-C inside one large case: the planners, the property check and the shrinker stop.
TEST(BatchLimits, AStopRequestStopsPlanningCheckingAndShrinking) {
  Batch b;
  b.page_size = 1;
  b.buffer_token_size = 64;
  b.max_chunks = 64;
  b.cache_lengths.assign(100, 10);
  b.input_row_offsets.assign(101, 0);
  std::atomic<bool> stop{true};
  EXPECT_THROW(plan_reference(b, &stop), Interrupted);
  EXPECT_NO_THROW(plan_reference(b));
  const PlanTables t = plan_reference(b);

  DropsPagePadding bad;
  check::Scenario s;
  s.name = "case";
  check::BatchGenerator gen(11, {64, 64, 64, false});
  for (int i = 0; i < 300; ++i) {
    s.batch = gen.next();
    profile::PhaseTimer timer;
    if (!check::check_case(s, bad, timer).passed) break;
  }
  int calls = 0;
  profile::request_stop();
  EXPECT_THROW(check::check_properties(b, t, 1), Interrupted);
  const check::Scenario shrunk = check::shrink_scenario(s, [&](const check::Scenario&) { ++calls; return true; });
  profile::clear_stop_request();
  EXPECT_EQ(calls, 1) << "only the first check, before any edit";
  EXPECT_EQ(shrunk.batch.cache_lengths, s.batch.cache_lengths);
}

// A --seed draws the same batches in every build: the CI gate's release binary, a sanitizer build
// and a developer's debug one (two draws in one expression had let the compiler choose their order,
// and the sanitize build drew other batches from seed 3). The fingerprint of the first 600 batches
// of seed 3 is what the release builds have drawn since the generator's shapes were last changed;
// this test runs in the release and the sanitize suites alike.
// libstdc++'s distributions (the toolchain CI builds with); another standard library draws otherwise.
constexpr uint64_t kSeed3Fingerprint = 4911273657390609659ull;

TEST(BatchGenerator, ASeedDrawsTheSameBatchesInEveryBuild) {
  check::BatchGenerator gen(3, check::BatchGeneratorOptions{});
  uint64_t h = 1469598103934665603ull;  // FNV-1a over every field of every batch
  auto mix = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * 1099511628211ull;
  };
  for (int i = 0; i < 600; ++i) {
    const Batch b = gen.next();
    mix(b.page_size);
    mix(b.buffer_token_size);
    mix(b.max_chunks);
    for (uint32_t c : b.cache_lengths) mix(c);
    for (uint32_t o : b.input_row_offsets) mix(o);
  }
  EXPECT_EQ(h, kSeed3Fingerprint);
}
