// Trace replay: the two trace readers on good and bad lines, the prefix cache's LRU, and hand traces
// replayed through batch formation, where every cached length is worked out by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "mlaplan/errors.hpp"
#include "mlaplan/workloads/batch_formation.hpp"
#include "mlaplan/replay/prefix_cache.hpp"
#include "mlaplan/replay/replay_source.hpp"
#include "mlaplan/replay/trace_reader.hpp"

namespace mlaplan::replay {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::vector<TraceRequest> read_all(const std::string& text, TraceFormat f = TraceFormat::automatic, uint32_t block = 512) {
  std::istringstream in(text);
  TraceReader r(in, "t.jsonl", f, block);
  std::vector<TraceRequest> out;
  while (auto q = r.next()) out.push_back(*q);
  return out;
}

std::string error_of(const std::string& text, TraceFormat f = TraceFormat::automatic) {
  try {
    read_all(text, f);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TraceReader, ReadsMooncakeLines) {
  const auto r = read_all(
      "{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 5, \"hash_ids\": [0, 1, 2]}\n"
      "\n"
      "{\"timestamp\": 27.5, \"input_length\": 7, \"output_length\": 0, \"hash_ids\": [9], \"extra\": true}\r\n");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].input_tokens, 1100u);
  EXPECT_EQ(r[0].output_tokens, 5u);
  EXPECT_EQ(r[0].blocks, (std::vector<uint64_t>{0, 1, 2}));
  EXPECT_EQ(r[1].line, 3u);
  EXPECT_DOUBLE_EQ(r[1].arrival_ms, 27.5);
}

TEST(TraceReader, MooncakeErrorsNameTheLineTheFieldAndTheFix) {
  const std::string ok = "{\"timestamp\": 5, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n";
  EXPECT_THAT(error_of(ok + "{\"timestamp\": 5, \"input_length\": 10,\n"), StartsWith("t.jsonl:2: invalid JSON ("));
  EXPECT_THAT(error_of(ok + "[1, 2]\n"), StartsWith("t.jsonl:2: a array where a JSON object should be"));
  EXPECT_THAT(error_of("{\"timestamp\": 0, \"output_length\": 1, \"hash_ids\": []}\n"),
              StartsWith("t.jsonl:1: input_length: missing; each line needs"));
  EXPECT_THAT(error_of("{\"timestamp\": 0, \"input_length\": -3, \"output_length\": 1, \"hash_ids\": []}\n"),
              StartsWith("t.jsonl:1: input_length: -3 is negative"));
  EXPECT_THAT(error_of("{\"timestamp\": 0, \"input_length\": 0, \"output_length\": 1, \"hash_ids\": []}\n"),
              StartsWith("t.jsonl:1: input_length: 0 is outside 1 .. 2147483647"));
  EXPECT_THAT(error_of("{\"timestamp\": 0, \"input_length\": 1.5, \"output_length\": 1, \"hash_ids\": []}\n"),
              StartsWith("t.jsonl:1: input_length: 1.5 is not a whole number"));
  EXPECT_THAT(error_of("{\"timestamp\": 0, \"input_length\": 1025, \"output_length\": 1, \"hash_ids\": [1, 2, 3, 4]}\n"),
              StartsWith("t.jsonl:1: hash_ids: 4 blocks of 512 tokens, but input_length 1025 fills at most 3"));
  EXPECT_THAT(error_of("{\"timestamp\": 0, \"input_length\": 9, \"output_length\": 1, \"hash_ids\": [-1]}\n"),
              StartsWith("t.jsonl:1: hash_ids[0]: -1 is not a block id"));
  EXPECT_THAT(error_of(ok + "{\"timestamp\": 4, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n"),
              StartsWith("t.jsonl:2: timestamp: 4 ms is before the previous request's 5 ms"));
  EXPECT_THAT(error_of("{\"timestamp\": \"x\", \"input_length\": 9, \"output_length\": 1, \"hash_ids\": []}\n"),
              StartsWith("t.jsonl:1: timestamp: \"x\" is not a time in ms"));
  EXPECT_THAT(error_of(""), StartsWith("t.jsonl: no requests"));
  EXPECT_THAT(error_of("\n  \n"), StartsWith("t.jsonl: no requests"));
  EXPECT_THAT(error_of("hello\n"), HasSubstr("give --replay-format mooncake or azure"));
}

TEST(TraceReader, ReadsAzureRowsWithCrlfAndAnyColumnOrder) {
  const auto r = read_all(
      "\xEF\xBB\xBFTIMESTAMP,ContextTokens,GeneratedTokens\r\n"
      "2023-11-16 18:17:03.9799600,4808,10\r\n"
      "2023-11-16 18:17:04.0319600,3180,8\r\n"
      "2023-11-17 00:00:00,1,0\r\n");
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].input_tokens, 4808u);
  EXPECT_TRUE(r[0].blocks.empty());
  EXPECT_DOUBLE_EQ(r[0].arrival_ms, 0);
  EXPECT_NEAR(r[1].arrival_ms, 52.0, 1e-6);
  EXPECT_NEAR(r[2].arrival_ms, (5 * 3600 + 42 * 60 + 56.02004) * 1000, 1e-3);  // across midnight
  const auto swapped = read_all("generatedtokens,TIMESTAMP,contexttokens\n3,2023-01-01 00:00:00,70\n");
  ASSERT_EQ(swapped.size(), 1u);
  EXPECT_EQ(swapped[0].input_tokens, 70u);
  EXPECT_EQ(swapped[0].output_tokens, 3u);
}

TEST(TraceReader, AzureErrorsNameTheLineTheFieldAndTheFix) {
  const std::string h = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
  EXPECT_THAT(error_of("TIMESTAMP,ContextTokens\n2023-01-01 00:00:00,5\n"),
              StartsWith("t.jsonl:1: header: no column GeneratedTokens"));
  EXPECT_THAT(error_of(h + "2023-01-01 00:00:00,-5,1\n"), StartsWith("t.jsonl:2: ContextTokens: -5 is negative"));
  EXPECT_THAT(error_of(h + "2023-01-01 00:00:00,5\n"), StartsWith("t.jsonl:2: 2 fields where the header has 3"));
  EXPECT_THAT(error_of(h + "yesterday,5,1\n"), StartsWith("t.jsonl:2: TIMESTAMP: 'yesterday' is not a time like"));
  EXPECT_THAT(error_of(h + "2023-01-01 00:00:01,5,1\n2023-01-01 00:00:00,5,1\n"),
              StartsWith("t.jsonl:3: TIMESTAMP: -1000 ms is before the previous request's 0 ms"));
  EXPECT_THAT(error_of(h), StartsWith("t.jsonl: no requests after the header"));
  EXPECT_THAT(error_of("{\"timestamp\": 0}\n", TraceFormat::azure), StartsWith("t.jsonl:1: header: no column"));
}

TEST(PrefixCache, MatchesLeadingRunsAndEvictsLeastRecentlyUsed) {
  PrefixCache unlimited;
  EXPECT_EQ(unlimited.match({1, 2, 3}), 0u);
  unlimited.insert({1, 2, 3});
  EXPECT_EQ(unlimited.match({1, 2, 3, 4}), 3u);
  EXPECT_EQ(unlimited.match({1, 9, 3}), 1u);  // a leading run only
  EXPECT_EQ(unlimited.match({2, 3}), 2u);

  PrefixCache lru(3);
  lru.insert({1, 2, 3});
  EXPECT_EQ(lru.match({1}), 1u);  // 1 is now the most recently used: 2 is the oldest
  lru.insert({4});
  EXPECT_FALSE(lru.contains(2));
  EXPECT_TRUE(lru.contains(1) && lru.contains(3) && lru.contains(4));
  lru.insert({5, 6});  // evicts 3 then 1
  EXPECT_FALSE(lru.contains(3));
  EXPECT_FALSE(lru.contains(1));
  EXPECT_EQ(lru.size(), 3u);
  EXPECT_EQ(lru.evictions(), 3u);
}

// A hand trace: each line "timestamp input blocks...".
std::string trace(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) {
    std::istringstream in(l);
    double ts;
    uint32_t input;
    in >> ts >> input;
    std::string ids;
    uint64_t id;
    while (in >> id) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
    out += "{\"timestamp\": " + std::to_string(ts) + ", \"input_length\": " + std::to_string(input) +
           ", \"output_length\": 1, \"hash_ids\": [" + ids + "]}\n";
  }
  return out;
}

struct Replayed {
  std::vector<Batch> batches;
  ReplayStats stats;
};

Replayed replay_text(const std::string& text, ReplayOptions o, uint32_t budget, uint32_t max_sequences = 256) {
  auto in = std::make_shared<std::istringstream>(text);
  ReplaySource source(std::make_unique<TraceReader>(*in, "hand.jsonl", TraceFormat::mooncake, o.block_size), o);
  workloads::BatchFormation f;
  f.token_budget = budget;
  f.max_sequences = max_sequences;
  workloads::BatchSettings s;
  s.page_size = 16;
  Replayed r{workloads::form_batches(source, f, s, 1000, 1), source.stats()};
  return r;
}

TEST(Replay, HitsMissesAndPartialPrefixesOneRequestPerStep) {
  ReplayOptions o;
  o.block_size = 4;
  // One request per step (max_sequences 1, a huge budget): each sees every earlier request's blocks.
  const auto r = replay_text(trace({"0 12 1 2 3",     // miss: 0 cached
                                    "0 10 1 2 9",     // blocks 1, 2 cached: 8
                                    "0 12 1 2 3",     // all three blocks: 12, capped to 11 (one new token)
                                    "0 6 7 1",        // 7 is not cached: a leading run of 0
                                    "0 9 1 2 9"}),    // 1, 2, 9 (9 from the second request): 9, capped to 8
                             o, 1000000000, 1);
  ASSERT_EQ(r.batches.size(), 5u);
  const std::vector<uint32_t> want = {0, 8, 11, 0, 8};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(r.batches[i].cache_lengths, std::vector<uint32_t>{want[i]}) << i;
  }
  EXPECT_EQ(r.stats.per_request_cached, want);
  EXPECT_EQ(r.stats.cached_tokens, 27u);
  EXPECT_EQ(r.stats.input_tokens, 49u);
}

TEST(Replay, RequestsOfOneStepDoNotSeeEachOthersBlocks) {
  ReplayOptions o;
  o.block_size = 4;
  // A budget of 24 new tokens: the first two requests share a step, the third comes after.
  const auto r = replay_text(trace({"0 12 1 2 3", "0 12 1 2 3", "0 12 1 2 3"}), o, 24);
  ASSERT_EQ(r.batches.size(), 2u);
  EXPECT_EQ(r.batches[0].cache_lengths, (std::vector<uint32_t>{0, 0}));
  EXPECT_EQ(r.batches[1].cache_lengths, (std::vector<uint32_t>{11}));
}

TEST(Replay, BlocksEnterWhenTheStepPrefillingTheLastTokenEnds) {
  ReplayOptions o;
  o.block_size = 4;
  // A budget of 8: request 0 (12 tokens) takes steps 0 and 1 (8 + 4); request 1 joins step 1 and
  // sees nothing, since request 0 finishes only as step 1 ends; request 2, admitted in step 2, hits.
  const auto r = replay_text(trace({"0 12 1 2 3", "0 8 1 2", "0 8 1 2"}), o, 8);
  ASSERT_EQ(r.batches.size(), 3u);
  EXPECT_EQ(r.batches[0].cache_lengths, (std::vector<uint32_t>{0}));
  EXPECT_EQ(r.batches[1].cache_lengths, (std::vector<uint32_t>{8, 0}));  // its own continuation, then request 1
  EXPECT_EQ(r.batches[2].cache_lengths, (std::vector<uint32_t>{4, 7}));  // request 1 continues; 8 cached, capped to 7
  EXPECT_EQ(r.stats.per_request_cached, (std::vector<uint32_t>{0, 0, 7}));
}

TEST(Replay, AFiniteCacheEvictsTheLeastRecentlyUsedBlock) {
  ReplayOptions o;
  o.block_size = 4;
  o.cache_tokens = 8;  // two blocks
  const auto r = replay_text(trace({"0 8 1 2",     // cache: 2, 1 (1 older)
                                    "0 8 1 5",     // hits 1 (refreshed), inserts 5: evicts 2
                                    "0 8 1 2",     // 1 hits, 2 gone: 4; inserting 2 evicts 5
                                    "0 8 5 1"}),   // 5 evicted: 0
                             o, 1000000000, 1);
  EXPECT_EQ(r.stats.per_request_cached, (std::vector<uint32_t>{0, 4, 4, 0}));
  EXPECT_GT(r.stats.evictions, 0u);
}

TEST(Replay, ArrivalsTakeOnlyWhatHasArrivedAndSkipIdleSteps) {
  ReplayOptions o;
  o.block_size = 4;
  o.step_ms = 10;
  // Steps start at 0, 10, 20, ...: requests at 0 and 5 go in steps 0 and 10; the one at 1000 waits
  // for step 1000, the steps in between being idle (no batch).
  const auto r = replay_text(trace({"0 4 1", "5 4 1", "1000 4 1"}), o, 1000000000);
  ASSERT_EQ(r.batches.size(), 3u);
  EXPECT_EQ(r.batches[0].cache_lengths, (std::vector<uint32_t>{0}));
  EXPECT_EQ(r.batches[1].cache_lengths, (std::vector<uint32_t>{3}));  // request 0's block, capped to 3
  EXPECT_EQ(r.batches[2].cache_lengths, (std::vector<uint32_t>{3}));
  // Without arrivals all three share one step and see nothing.
  o.step_ms = 0;
  EXPECT_EQ(replay_text(trace({"0 4 1", "5 4 1", "1000 4 1"}), o, 1000000000).batches.size(), 1u);
}

TEST(Replay, MaxModelLenDropsRequestsBeforeTheCache) {
  ReplayOptions o;
  o.block_size = 4;
  o.max_model_len = 10;
  const auto r = replay_text(trace({"0 12 1 2 3", "0 8 1 2"}), o, 1000000000, 1);
  EXPECT_EQ(r.stats.dropped, 1u);
  EXPECT_EQ(r.stats.per_request_cached, (std::vector<uint32_t>{0}));  // the dropped request cached nothing
  EXPECT_THAT(r.stats.describe(), HasSubstr("1 over max_model_len dropped"));
}

TEST(Replay, AzureRequestsCacheOnlyWhatChunkedPrefillCarries) {
  std::istringstream in("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-01-01 00:00:00,100,1\n2023-01-01 00:00:01,30,1\n");
  ReplayOptions o;
  ReplaySource source(std::make_unique<TraceReader>(in, "a.csv", TraceFormat::automatic, 512), o);
  workloads::BatchFormation f;
  f.token_budget = 64;
  workloads::BatchSettings s;
  const auto batches = workloads::form_batches(source, f, s, 100, 1);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0].cache_lengths, (std::vector<uint32_t>{0}));
  EXPECT_EQ(batches[1].cache_lengths, (std::vector<uint32_t>{64, 0}));
  EXPECT_DOUBLE_EQ(source.stats().hit_rate(), 0.0);
}

}  // namespace
}  // namespace mlaplan::replay
