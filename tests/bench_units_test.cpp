// The pieces of bench that need no timing: size lists, sample statistics and the stopping rule,
// and the workload generator's guarantees.
#include <gtest/gtest.h>

#include "mlaplan/bench/measurement.hpp"
#include "mlaplan/bench/sample_stats.hpp"
#include "mlaplan/bench/size_list.hpp"
#include "mlaplan/bench/workload.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/plan_shape.hpp"

using namespace mlaplan;
using namespace mlaplan::bench;

TEST(BenchSizes, ListsAndRanges) {
  EXPECT_EQ(parse_sizes("1,16,128"), (std::vector<uint32_t>{1, 16, 128}));
  EXPECT_EQ(parse_sizes("1:1048576:x4"), (std::vector<uint32_t>{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576}));
  EXPECT_EQ(parse_sizes("64:256:+64"), (std::vector<uint32_t>{64, 128, 192, 256}));
  EXPECT_EQ(parse_sizes("1,2:8:x2,4"), (std::vector<uint32_t>{1, 2, 4, 8}));  // duplicates dropped
  EXPECT_EQ(parse_sizes("3:10:x4"), (std::vector<uint32_t>{3}));               // the last point may be short of LAST
}

TEST(BenchSizes, BadSpecsNameTheOption) {
  for (const char* bad : {"", "a", "1,,2", "0", "8:1:x2", "1:8:x1", "1:8", "1:8:*2", "1:8:+", "-1"}) {
    try {
      parse_sizes(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("--sizes: ", 0), 0u) << e.what();
    }
  }
}

TEST(BenchStats, MedianQuartilesAndSpread) {
  const SampleStats s = summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(s.samples, 5u);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.p25, 2);
  EXPECT_DOUBLE_EQ(s.p75, 4);
  EXPECT_DOUBLE_EQ(s.spread(), 4.0 / 3.0);
  EXPECT_DOUBLE_EQ(s.iqr(), 2.0 / 3.0);
}

TEST(BenchStats, StopsOnceTheMedianIsKnownOrTimeIsUp) {
  StoppingRule rule;
  rule.min_samples = 10;
  rule.max_noise = 0.01;
  rule.max_time_s = 1;
  EXPECT_FALSE(should_stop(rule, std::vector<double>(9, 1.0), 0.1));  // too few samples
  EXPECT_TRUE(should_stop(rule, std::vector<double>(10, 1.0), 0.1));  // identical samples: the median is exact
  std::vector<double> noisy;
  for (int i = 0; i < 16; ++i) noisy.push_back(i % 2 ? 1.0 : 2.0);
  EXPECT_FALSE(should_stop(rule, noisy, 0.1));  // half the samples twice the others: not known to 1%
  EXPECT_TRUE(should_stop(rule, noisy, 1.5));   // but the time cap ends it
  EXPECT_FALSE(should_stop(rule, {100.0, 101.0, 99.0}, 2.0));  // samples longer than the cap: still 5 at least
  EXPECT_TRUE(should_stop(rule, {100.0, 101.0, 99.0, 100.0, 100.0}, 2.0));
}

TEST(BenchWorkload, EverySetIsFeasibleAndUsesAboutTheRequestedShare) {
  for (const char* dist : {"fixed", "uniform", "lognormal", "zipf"}) {
    WorkloadOptions o;
    o.distribution = parse_distribution(dist);
    o.max_chunks = 16;
    o.fill = 0.75;
    for (uint32_t b : {1u, 7u, 1000u, 20000u}) {
      const auto sets = make_input_sets(b, o);
      ASSERT_EQ(sets.size(), o.input_sets);
      uint64_t most = 0;
      for (const Batch& s : sets) {
        EXPECT_EQ(s.batch_size(), b);
        EXPECT_EQ(s.buffer_token_size, sets[0].buffer_token_size);  // one N per size
        const PlanShape shape = require_feasible(s);
        most = std::max(most, shape.chunks_used);
        for (uint32_t i = 0; i < b; ++i) EXPECT_GE(s.input_length(i), 1u) << "prefill has new tokens";
      }
      EXPECT_LE(most, 12u) << dist << " " << b;  // 75% of 16
      EXPECT_GE(most, 11u) << dist << " " << b;
    }
    EXPECT_NE(make_input_sets(100, o)[0].cache_lengths, make_input_sets(100, o)[1].cache_lengths) << "sets differ";
  }
}

TEST(BenchWorkload, ImpossibleRequestsNameTheOption) {
  WorkloadOptions o;
  o.buffer_tokens = 128;
  o.max_chunks = 2;
  try {
    make_input_sets(100, o);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--buffer-tokens: ", 0), 0u) << e.what();
  }
  WorkloadOptions big;
  big.mean_length = 1u << 20;
  try {
    make_input_sets(1u << 14, big);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--mean-length: ", 0), 0u) << e.what();
  }
}

TEST(BenchKernels, NamesRoundTrip) {
  for (Kernel k : all_kernels()) EXPECT_EQ(parse_kernels(to_string(k)), std::vector<Kernel>{k});
  EXPECT_EQ(parse_kernels("all").size(), all_kernels().size());
  EXPECT_THROW(parse_kernels("cpu,gpu"), InputError);
}
