// The pieces of bench that need no timing: size lists, sample statistics and the stopping rule,
// and the workload generator's guarantees.
#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "mlaplan/bench/bench_format.hpp"
#include "mlaplan/bench/bench_report.hpp"
#include "mlaplan/bench/host_cache.hpp"
#include "mlaplan/bench/measurement.hpp"
#include "mlaplan/bench/sample_stats.hpp"
#include "mlaplan/bench/size_list.hpp"
#include "mlaplan/bench/timed_batches.hpp"
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
    TimedBatchOptions o;
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
  TimedBatchOptions o;
  o.buffer_tokens = 128;
  o.max_chunks = 2;
  try {
    make_input_sets(100, o);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--buffer-tokens: ", 0), 0u) << e.what();
  }
  TimedBatchOptions big;
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
  // seed is max-port's name before 2026-12-01: still accepted, printed as max-port.
  EXPECT_EQ(parse_kernels("seed,fast,max-port"), (std::vector<Kernel>{Kernel::max_port, Kernel::fast}));
  EXPECT_STREQ(to_string(Kernel::max_port), "max-port");
}

namespace {
Measurement measured(double median_us) {
  Measurement m;
  m.stats.median = median_us;
  m.stats.min = m.stats.max = median_us;
  m.stats.samples = 10;
  return m;
}
}  // namespace

// The roofline: the empty launch of the row's mode (the empty graph for graph rows) plus the
// tables' bytes at the write-only bandwidth and the inputs' at the copy's (the write-only one
// without a copy), worked by hand for B = 1M, M = 16 and M = 1.
TEST(BenchRoofline, EmptyLaunchPlusTheTablesAtTheWriteBandwidthAndTheInputsAtTheCopys) {
  BenchReport report;
  report.options.workload.max_chunks = 16;
  report.empty_hot = measured(3.0);
  report.empty_graph_hot = measured(2.5);
  CopyMeasurement write;
  write.bytes = 4e9;
  write.time = measured(1e3);  // 4e9 bytes in 1 ms: 4000 GB/s
  report.write = write;
  const uint32_t B = 1u << 20;
  for (Kernel k : {Kernel::fast, Kernel::graph, Kernel::cpu_fast}) {
    BenchRow r;
    r.size = B;
    r.kernel = k;
    r.mode = Mode::hot;
    r.measurement = measured(50.0);
    r.bytes = plan_bytes(B, 16);
    report.rows.push_back(r);
  }
  derive_columns(report);
  const double tables = 4.0 * (16.0 * (B + 1) + 16.0 * B + 16);  // 134,217,856 bytes
  EXPECT_DOUBLE_EQ(table_bytes(B, 16), tables);
  const double inputs = 4.0 * (2.0 * B + 1);                 // cache lengths and offsets, 8 MiB
  const double fast_roof = 3.0 + tables / 4000.0 / 1e3 + inputs / 4000.0 / 1e3;  // 3 us + 33.55 us + 2.10 us
  ASSERT_TRUE(report.rows[0].roofline_us && report.rows[0].x_roofline);
  EXPECT_NEAR(*report.rows[0].roofline_us, fast_roof, 1e-9);
  EXPECT_NEAR(*report.rows[0].x_roofline, 50.0 / fast_roof, 1e-9);
  EXPECT_NEAR(*report.rows[0].x_empty, 50.0 / 3.0, 1e-9);
  // graph rows stand on the empty graph's replay.
  EXPECT_NEAR(*report.rows[1].roofline_us, 2.5 + (tables + inputs) / 4000.0 / 1e3, 1e-9);
  EXPECT_NEAR(*report.rows[1].x_empty, 50.0 / 2.5, 1e-9);
  // A CPU planner has no GPU roofline.
  EXPECT_FALSE(report.rows[2].roofline_us);
  EXPECT_FALSE(report.rows[2].x_roofline);

  // With a copy measured the inputs are read at its rate; at M = 1 they weigh as much as the tables.
  CopyMeasurement copy;
  copy.bytes = 2 * 3e9;
  copy.time = measured(2e3);  // 6e9 bytes in 2 ms: 3000 GB/s
  report.copy = copy;
  report.options.workload.max_chunks = 1;
  report.rows.resize(1);
  report.rows[0].bytes = plan_bytes(B, 1);
  derive_columns(report);
  const double tables1 = static_cast<double>(table_bytes(B, 1));  // 8 (B + 1): as many bytes as the inputs
  EXPECT_NEAR(tables1, inputs + 4, 1e-9);
  EXPECT_NEAR(*report.rows[0].roofline_us, 3.0 + tables1 / 4000.0 / 1e3 + inputs / 3000.0 / 1e3, 1e-9);
}

TEST(BenchRoofline, NoWriteMeasurementNoRoofline) {
  BenchReport report;
  report.empty_hot = measured(3.0);
  BenchRow r;
  r.size = 1024;
  r.kernel = Kernel::fast;
  r.measurement = measured(5.0);
  report.rows.push_back(r);
  derive_columns(report);
  EXPECT_TRUE(report.rows[0].x_empty);
  EXPECT_FALSE(report.rows[0].x_roofline);
}

// Samples taken one at a time (interleaved with other kernels') stop by the same rule.
TEST(BenchStats, ASeriesStopsByTheRuleOnItsOwnTime) {
  StoppingRule rule;
  rule.min_samples = 5;
  rule.max_noise = 0.5;
  rule.max_time_s = 100;
  SampleSeries steady(rule, 3);
  for (int i = 0; i < 4; ++i) steady.add(10.0, 0.001);
  EXPECT_FALSE(steady.done()) << "fewer than min_samples";
  steady.add(10.0, 0.001);
  EXPECT_TRUE(steady.done());
  EXPECT_EQ(steady.result().launches_per_sample, 3u);
  EXPECT_DOUBLE_EQ(steady.result().stats.median, 10.0);
  rule.max_noise = 0;  // never known well enough: only time stops it
  rule.max_time_s = 0.01;
  SampleSeries slow(rule, 1);
  for (int i = 0; i < 20 && !slow.done(); ++i) slow.add(i, 0.004);
  EXPECT_TRUE(slow.done());
  EXPECT_EQ(slow.result().stats.samples, 5u) << "past the time, still the 5 samples a median needs";
  EXPECT_NEAR(slow.result().elapsed_s, 0.02, 1e-12);
}

// The text and Markdown tables, cell for cell, so the layout (alignment, widths, scaled times, the
// mark of a measurement that stopped at its cap, the "-" of a missing ratio, the closing lines) stays fixed.
TEST(BenchFormat, TableAndMarkdownLayoutsAreFixed) {
  BenchReport report;
  report.host_device = "none";
  BenchRow fast;
  fast.size = 1048576;
  fast.kernel = Kernel::fast;
  fast.mode = Mode::cold;
  fast.measurement = measured(1234.5);
  fast.measurement.stats.max = 1300;
  fast.measurement.stats.noise = 0.012;  // past the 0.5% target: stopped at the cap
  fast.gbps = 123.4;
  fast.pct_copy = 3.25;
  fast.x_empty = 412.0;
  fast.x_roofline = 1.57;
  fast.speedup_vs_max_port = 38.9;
  BenchRow cpu;
  cpu.size = 1;
  cpu.kernel = Kernel::cpu_fast;
  cpu.mode = Mode::hot;
  cpu.measurement = measured(0.0421);
  cpu.gbps = 4.5;
  cpu.speedup_vs_cpu_copy = 7.25;
  report.rows = {fast, cpu};
  const std::string table = format_bench_table(report);
  EXPECT_EQ(table.substr(table.find("\n\n") + 2),
            "batch    kernel    mode   median  CI 95%  samples  GB/s  % copy  x empty  x roofline  vs max-port  vs cpu+copy\n"
            "1048576  fast      cold  1.23 ms  1.20%*       10   123    3.2%     412x       1.57x          39x            -\n"
            "1        cpu-fast  hot   42.1 ns   0.00%       10  4.50       -        -           -            -        7.25x\n"
            "median: time per plan; CI 95%: how well the median is known (its 95% confidence interval); *: stopped at the 0.25 s cap\n"
            "    (--max-time) before 0.50% (--max-noise)\n");
  const std::string md = format_bench_markdown(report);
  EXPECT_EQ(md.substr(md.find("\n\n") + 2),
            "| batch | kernel | mode | median | CI 95% | samples | GB/s | % copy | x empty | x roofline | vs max-port | vs cpu+copy |\n"
            "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
            "| 1048576 | fast | cold | 1.23 ms | 1.20%* | 10 | 123 | 3.2% | 412x | 1.57x | 39x | - |\n"
            "| 1 | cpu-fast | hot | 42.1 ns | 0.00% | 10 | 4.50 | - | - | - | - | 7.25x |\n"
            "\n"
            "median: time per plan; CI 95%: how well the median is known (its 95% confidence interval); *: stopped at the 0.25 s cap\n"
            "    (--max-time) before 0.50% (--max-noise)\n");
  // Two planners of one mode: the closing line says which is faster at the largest batch, and by how much.
  BenchRow port = fast;
  port.kernel = Kernel::max_port;
  port.measurement = measured(4936.0);
  report.rows.push_back(port);
  EXPECT_NE(format_bench_table(report).find("batch 1048576, cold: fast is fastest (1.23 ms), 4.00x faster than max-port\n"),
            std::string::npos) << format_bench_table(report);
}

namespace {

// A fake sysfs CPU folder: cache/indexN/{level,type,size} for each (level, type, size) given.
std::string fake_cpu(const std::string& name, const std::vector<std::array<const char*, 3>>& caches) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / name;
  std::filesystem::remove_all(dir);
  for (size_t i = 0; i < caches.size(); ++i) {
    const auto index = dir / "cache" / ("index" + std::to_string(i));
    std::filesystem::create_directories(index);
    const char* files[] = {"level", "type", "size"};
    for (int f = 0; f < 3; ++f) std::ofstream(index / files[f]) << caches[i][f] << "\n";
  }
  return dir.string();
}

}  // namespace

TEST(HostCache, TheLastLevelIsTheHighestDataOrUnifiedCacheSysfsLists) {
  // An AMD EPYC guest's core: 32 KiB L1d, 32 KiB L1i, 1 MiB L2, a 32 MiB slice of L3.
  const std::string epyc = fake_cpu("epyc", {{"1", "Data", "32K"}, {"1", "Instruction", "32K"}, {"2", "Unified", "1024K"},
                                             {"3", "Unified", "32768K"}});
  EXPECT_EQ(bench::sysfs_last_level_cache_bytes(epyc), size_t{32} << 20);
  EXPECT_EQ(bench::sysfs_last_level_cache_bytes(fake_cpu("l2only", {{"1", "Data", "48K"}, {"2", "Unified", "2M"}})), size_t{2} << 20);
  // An instruction cache is not one a sample's data goes through; a size sysfs did not write is none.
  EXPECT_EQ(bench::sysfs_last_level_cache_bytes(fake_cpu("icache", {{"1", "Data", "48K"}, {"3", "Instruction", "64M"}})), size_t{48} << 10);
  for (const char* bad : {"", "K", "32X", "32KB", "-1", "99999999999999999K"})
    EXPECT_EQ(bench::sysfs_last_level_cache_bytes(fake_cpu("bad", {{"3", "Unified", bad}})), 0u) << bad;
  EXPECT_EQ(bench::sysfs_last_level_cache_bytes(fake_cpu("empty", {})), 0u);
  EXPECT_EQ(bench::sysfs_last_level_cache_bytes("/nonexistent/cpu0"), 0u);
  // This machine's: four times a cache of at least 1 MiB, and at most 4 GiB in all.
  EXPECT_GE(bench::host_flush_bytes(), size_t{4} << 20);
  EXPECT_LE(bench::host_flush_bytes(), size_t{4} << 30);
}
