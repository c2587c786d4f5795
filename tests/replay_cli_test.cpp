// `gen --replay` and `sweep --replay` end to end: with one request per step, each scenario's
// cache_lengths[0] is the prefix cache's hit for that request, checked against hand-worked values
// and, on an excerpt of the public Mooncake trace, against an independent count of leading runs of
// blocks seen before.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"

namespace {

using json = nlohmann::json;
using mlaplan::test::has;
using mlaplan::test::kData;
using mlaplan::test::run_cli;
using mlaplan::test::scratch;
using mlaplan::test::slurp;
using mlaplan::test::write;
namespace fs = std::filesystem;

// cache_lengths[0] of every scenario gen wrote: one request per step, so one per scenario.
std::vector<uint32_t> first_cached(const std::string& gen_args) {
  const auto r = run_cli("gen " + gen_args + " --token-budget 1000000000 --max-sequences 1 --batches 100000");
  EXPECT_EQ(r.code, 0) << r.err;
  std::vector<uint32_t> out;
  const json doc = json::parse(r.out);  // kept: a range-for over a member of a temporary would dangle
  for (const json& s : doc["scenarios"]) out.push_back(s["cache_lengths"][0]);
  return out;
}

TEST(ReplayCli, GenWritesEachRequestsHitUnlimitedAndLru) {
  const fs::path dir = scratch("replay-hand");
  // Blocks of 4 tokens. Unlimited: 0; 1, 2 cached = 8; all three = 12, capped at 11; 7 unseen = 0.
  write(dir / "t.jsonl",
        "{\"timestamp\": 0, \"input_length\": 12, \"output_length\": 1, \"hash_ids\": [1, 2, 3]}\n"
        "{\"timestamp\": 1, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1, 2, 9]}\n"
        "{\"timestamp\": 2, \"input_length\": 12, \"output_length\": 1, \"hash_ids\": [1, 2, 3]}\n"
        "{\"timestamp\": 3, \"input_length\": 6, \"output_length\": 1, \"hash_ids\": [7, 1]}\n");
  const std::string trace = (dir / "t.jsonl").string() + " --replay-block-size 4";
  EXPECT_EQ(first_cached("--replay " + trace), (std::vector<uint32_t>{0, 8, 11, 0}));
  // A cache of 3 blocks: after request 1 it holds 9, 2, 1 (3 evicted), so request 2 matches 1, 2: 8.
  EXPECT_EQ(first_cached("--replay " + trace + " --prefix-cache-tokens 12"), (std::vector<uint32_t>{0, 8, 8, 0}));
  // Without --batches, gen writes every step of the trace: one scenario per request here.
  const auto all = run_cli("gen --replay " + trace + " --token-budget 1000000000 --max-sequences 1");
  ASSERT_EQ(all.code, 0) << all.err;
  const json doc = json::parse(all.out);
  ASSERT_EQ(doc["scenarios"].size(), 4u);
  EXPECT_EQ(doc["scenarios"][2]["cache_lengths"], json::parse("[11]"));
  EXPECT_FALSE(has(all.err, "ran out")) << all.err;
  fs::remove_all(dir);
}

TEST(ReplayCli, AMooncakeExcerptMatchesAnIndependentCount) {
  const std::string path = kData + "/mooncake_conversation_head2000.jsonl";
  std::vector<uint32_t> want;
  uint64_t input = 0, cached = 0;
  std::set<uint64_t> seen;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    const json j = json::parse(line);
    size_t run = 0;
    while (run < j["hash_ids"].size() && seen.count(j["hash_ids"][run].get<uint64_t>())) ++run;
    const uint32_t length = j["input_length"];
    want.push_back(std::min<uint32_t>(static_cast<uint32_t>(run * 512), length - 1));
    for (const json& id : j["hash_ids"]) seen.insert(id.get<uint64_t>());
    input += length;
    cached += want.back();
  }
  ASSERT_EQ(want.size(), 2000u);
  EXPECT_EQ(first_cached("--replay " + path), want);
  const auto r = run_cli("gen --replay " + path + " --token-budget 1000000000 --max-sequences 1 --batches 2000 -o /dev/null");
  ASSERT_EQ(r.code, 0) << r.err;
  char share[32];
  std::snprintf(share, sizeof share, "%.1f%% of input tokens cached", 100.0 * cached / input);
  EXPECT_TRUE(has(r.err, "replay: 2000 requests: " + std::string(share))) << r.err << share;
}

TEST(ReplayCli, AnAzureExcerptWithCrlfReplaysWithoutPrefixes) {
  const std::vector<uint32_t> cached = first_cached("--replay " + kData + "/azure_code_head2000.csv");
  ASSERT_EQ(cached.size(), 2000u);
  for (uint32_t c : cached) EXPECT_EQ(c, 0u);
}

TEST(ReplayCli, SweepReportsTheReplayAndItsHitRate) {
  const auto r = run_cli("sweep --replay " + kData + "/mooncake_conversation_head2000.jsonl --buffer-tokens 8192,65536 "
                         "--policy packed --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  const std::string source = j["source"];
  EXPECT_TRUE(has(source, "mooncake trace, 2000 requests read, unlimited prefix cache")) << source;
  EXPECT_TRUE(has(source, "2000 requests: ")) << source;
  EXPECT_EQ(j["rows"].size(), 2u);
  // A finite cache hits less.
  const auto lru = run_cli("sweep --replay " + kData + "/mooncake_conversation_head2000.jsonl --buffer-tokens 8192 "
                           "--policy packed --prefix-cache-tokens 100000 --format json");
  ASSERT_EQ(lru.code, 0) << lru.err;
  auto share = [](const std::string& s) { return std::stod(s.substr(s.find(" requests: ") + 11)); };
  EXPECT_LT(share(json::parse(lru.out)["source"]), share(source));
}

}  // namespace
