// --timing eager end to end (docs/cost-model.md, Eager time): with every host cost 0 the eager
// times of run and sweep are their graph times and nothing is host-bound; with a large host cost
// every setting is host-bound and no time is below the graph one. Random batches: scenarios drawn
// here for run, workload seeds for sweep.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "cli_runner.hpp"

namespace mlaplan {
namespace {

using nlohmann::json;
using test::run_cli;

const std::string kExample = test::kData + "/cost/deepseek-v3-tp8-eager-example.json";

// The example with every host cost set to `us`.
std::string cost_file(const std::filesystem::path& dir, double us) {
  json j = json::parse(test::slurp(kExample));
  for (auto& [kind, v] : j["host"]["launch_us"].items()) v = us;
  const std::filesystem::path p = dir / ("host-" + std::to_string(static_cast<int>(us)) + ".json");
  test::write(p, j.dump(2));
  return p.string();
}

std::filesystem::path fresh_dir(const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() / ("mlaplan_eager_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

json run_json(const std::string& args) {
  const test::CliResult r = run_cli(args);
  EXPECT_EQ(r.code, 0) << args << "\n" << r.err;
  return r.code == 0 ? json::parse(r.out) : json();
}

// A random scenario: 1-6 sequences, some without context, enough chunks for max.
std::string random_scenario(const std::filesystem::path& dir, std::mt19937& rng, int i) {
  const uint32_t B = 1 + rng() % 6, page = rng() % 2 ? 64 : 16;
  json s;
  s["name"] = "random-" + std::to_string(i);
  s["page_size"] = page;
  s["buffer_token_size"] = page * (4 + rng() % 60);
  s["max_chunks"] = 256;
  std::vector<uint32_t> cache, offsets{0};
  for (uint32_t b = 0; b < B; ++b) {
    cache.push_back(rng() % 3 ? rng() % 20000 : 0);
    offsets.push_back(offsets.back() + 1 + rng() % 600);
  }
  s["cache_lengths"] = cache;
  s["input_row_offsets"] = offsets;
  const auto p = dir / ("s" + std::to_string(i) + ".json");
  test::write(p, s.dump());
  return p.string();
}

void expect_near(double eager, double graph, const std::string& what) {
  EXPECT_NEAR(eager, graph, 1e-6 * std::max(1.0, std::abs(graph))) << what;
}

const char* kPolicies[] = {"max", "packed", "even-split", "even-split/sglang", "packed/trtllm"};

TEST(EagerCli, RunWithoutHostCostIsGraphTime) {
  const auto dir = fresh_dir("run0");
  const std::string zero = cost_file(dir, 0), large = cost_file(dir, 500);
  std::mt19937 rng(23);
  int priced = 0;
  for (int i = 0; i < 12; ++i) {
    const std::string s = random_scenario(dir, rng, i);
    for (const char* p : kPolicies) {
      const std::string base = "run " + s + " --no-verify --format json --policy " + p + " --cost ";
      const json graph = run_json(base + zero);
      const json eager = run_json(base + zero + " --timing eager");
      const json slow = run_json(base + large + " --timing eager");
      if (!graph.contains("predicted_time")) continue;  // refused
      ++priced;
      const json &g = graph["predicted_time"], &e = eager["predicted_time"], &h = slow["predicted_time"];
      EXPECT_FALSE(g.contains("host_bound_share"));  // graph output as it was
      EXPECT_EQ(e["timing"], "eager");
      const std::string what = s + " " + p;
      for (const char* key : {"layer_ms", "step_ms", "iteration_overhead_share", "lower_bound_step_ms", "over_lower_bound"})
        expect_near(e[key].get<double>(), g[key].get<double>(), what + " " + key);
      EXPECT_EQ(e["iterations"], g["iterations"]) << what;
      EXPECT_EQ(e["path"], g["path"]) << what;
      EXPECT_LT(e["host_bound_share"].get<double>(), 1e-9) << what;
      // 500 us per launch: the device waits for the host, on the loop and the whole-context path alike.
      EXPECT_GT(h["host_bound_share"].get<double>(), 0.0) << what;
      EXPECT_GE(h["layer_ms"].get<double>(), g["layer_ms"].get<double>()) << what;
      EXPECT_GE(h["lower_bound_step_ms"].get<double>(), g["lower_bound_step_ms"].get<double>() * (1 - 1e-9)) << what;
    }
  }
  EXPECT_GT(priced, 40);
  std::filesystem::remove_all(dir);
}

TEST(EagerCli, SweepWithoutHostCostIsGraphTime) {
  const auto dir = fresh_dir("sweep0");
  const std::string zero = cost_file(dir, 0), large = cost_file(dir, 500);
  for (const char* workload : {"coding-agent", "short-chat"}) {
    for (int seed : {3, 11}) {
      const std::string base = std::string("sweep --workload ") + workload + " --batches 150 --seed " + std::to_string(seed) +
                               " --policy variants --buffer-tokens 1024:65536:x4 --max-chunks 4,64 --format json --cost ";
      const json graph = run_json(base + zero), eager = run_json(base + zero + " --timing eager"),
                 slow = run_json(base + large + " --timing eager");
      ASSERT_EQ(graph["rows"].size(), eager["rows"].size());
      EXPECT_FALSE(graph.contains("predicted_timing"));
      EXPECT_EQ(eager["predicted_timing"], "eager");
      for (size_t r = 0; r < graph["rows"].size(); ++r) {
        const json &g = graph["rows"][r], &e = eager["rows"][r], &h = slow["rows"][r];
        const std::string what = std::string(workload) + " seed " + std::to_string(seed) + " row " + std::to_string(r);
        EXPECT_FALSE(g.contains("host_bound_share")) << what;
        if (!g.contains("layer_ms")) continue;
        ASSERT_TRUE(e.contains("layer_ms") && h.contains("layer_ms")) << what;
        for (const auto& [q, v] : g["layer_ms"].items()) {  // a quantile some refusal reaches is absent in all three
          ASSERT_TRUE(e["layer_ms"].contains(q) && h["layer_ms"].contains(q)) << what << " " << q;
          expect_near(e["layer_ms"][q].get<double>(), v.get<double>(), what + " " + q);
          EXPECT_GE(h["layer_ms"][q].get<double>(), v.get<double>() * (1 - 1e-6)) << what << " " << q;
        }
        for (const char* key : {"iteration_overhead_share", "over_lower_bound"})
          expect_near(e[key].get<double>(), g[key].get<double>(), what + " " + key);
        EXPECT_EQ(e["path"], g["path"]) << what;
        EXPECT_LT(e["host_bound_share"].get<double>(), 1e-9) << what;
        if (g["paths"]["chunked"].get<double>() + g["paths"]["one_shot"].get<double>() + g["paths"]["absorbed"].get<double>() > 0)
          EXPECT_GT(h["host_bound_share"].get<double>(), 0.0) << what;
      }
    }
  }
  std::filesystem::remove_all(dir);
}

// Graph timing's outputs are those of a sweep without --timing, byte for byte, in every format; an
// eager one's CSV gains the host_bound_share column only.
TEST(EagerCli, GraphOutputsUnchanged) {
  const std::string base = "sweep --workload coding-agent --batches 80 --policy variants --cost " + kExample;
  for (const char* format : {"table", "md", "csv", "json"}) {
    const auto plain = run_cli(base + " --format " + format), graph = run_cli(base + " --timing graph --format " + format);
    ASSERT_EQ(plain.code, 0) << plain.err;
    // The header's evaluation time differs from run to run.
    auto no_seconds = [](std::string s) {
      const size_t at = s.find("evaluated in");
      if (at != std::string::npos) s.erase(at, s.find('\n', at) - at);
      const size_t sec = s.find("\"seconds\"");
      if (sec != std::string::npos) s.erase(sec, s.find('\n', sec) - sec);
      return s;
    };
    EXPECT_EQ(no_seconds(plain.out), no_seconds(graph.out)) << format;
    EXPECT_FALSE(test::has(plain.out, "host")) << format;
  }
  const auto csv = run_cli(base + " --timing eager --format csv");
  ASSERT_EQ(csv.code, 0) << csv.err;
  EXPECT_TRUE(test::has(csv.out.substr(0, csv.out.find('\n')), ",over_lower_bound,host_bound_share,layers,"));
  const auto plain = run_cli(base + " --format csv");
  EXPECT_EQ(test::lines(csv.out), test::lines(plain.out));
  // The header says what the times are: the file's graph timing, plus its host costs where eager.
  const auto table = run_cli(base + " --timing eager"), graph_table = run_cli(base);
  EXPECT_TRUE(test::has(table.out, "graph timing + host costs, priced eagerly, calibrated")) << table.out;
  EXPECT_FALSE(test::has(graph_table.out, "priced eagerly")) << graph_table.out;
  const auto run = run_cli(std::string("run ") + MLAPLAN_SOURCE_DIR + "/scenarios/worked-example.json --model deepseek-v3 --tp 8 --cost " + kExample +
                           " --timing eager");
  EXPECT_TRUE(test::has(run.out, "+ host costs, priced eagerly")) << run.out << run.err;
  EXPECT_FALSE(test::has(run.out, "stated at")) << run.out;  // the example records no probe
}

// Where the file records the host speed its costs are stated at, run and sweep say so: run's host
// line and JSON, sweep's JSON costs; graph timing says nothing of it.
TEST(EagerCli, TheHostSpeedOfTheCostsIsNamed) {
  const auto dir = fresh_dir("probe");
  json j = json::parse(test::slurp(kExample));
  j["host"]["probe_ms"] = 0.82;
  j["host"]["probe"] = "dispatch";
  const std::string file = (dir / "probed.json").string();
  test::write(file, j.dump(2));
  const std::string scenario = std::string(MLAPLAN_SOURCE_DIR) + "/scenarios/worked-example.json --model deepseek-v3 --tp 8 --cost ";
  const auto text = run_cli("run " + scenario + file + " --timing eager");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_TRUE(test::has(text.out, "; stated at a dispatch probe of 0.820 ms\n")) << text.out;
  const json t = run_json("run " + scenario + file + " --timing eager --format json")["predicted_time"];
  EXPECT_EQ(t["host_probe"], "dispatch");
  EXPECT_DOUBLE_EQ(t["host_probe_ms"].get<double>(), 0.82);
  EXPECT_FALSE(t.contains("host_date"));  // the example records no date for its host runs
  EXPECT_FALSE(run_json("run " + scenario + file + " --format json")["predicted_time"].contains("host_probe"));
  const json s = run_json("sweep --workload short-chat --batches 20 --cost " + file + " --timing eager --format json");
  EXPECT_EQ(s["costs"][0]["host_probe"], "dispatch");
  EXPECT_DOUBLE_EQ(s["costs"][0]["host_probe_ms"].get<double>(), 0.82);
  EXPECT_FALSE(s["costs"][0].contains("host_date"));
  // A section refitted after the graph fit says when its runs were timed: the host line, run's JSON
  // and sweep's costs; graph timing says nothing of it.
  j["host"]["date"] = "2026-12-04";
  test::write(file, j.dump(2));
  EXPECT_TRUE(test::has(run_cli("run " + scenario + file + " --timing eager").out,
                        "; stated at a dispatch probe of 0.820 ms; timed 2026-12-04\n"));
  EXPECT_EQ(run_json("run " + scenario + file + " --timing eager --format json")["predicted_time"]["host_date"], "2026-12-04");
  EXPECT_FALSE(run_json("run " + scenario + file + " --format json")["predicted_time"].contains("host_date"));
  EXPECT_EQ(run_json("sweep --workload short-chat --batches 20 --cost " + file + " --timing eager --format json")["costs"][0]["host_date"],
            "2026-12-04");
  j["host"].erase("date");
  j["host"].erase("probe");  // a file that names no probe is stated at the CPU probe
  test::write(file, j.dump(2));
  EXPECT_TRUE(test::has(run_cli("run " + scenario + file + " --timing eager").out, "stated at a CPU probe of 0.820 ms"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mlaplan
