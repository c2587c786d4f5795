#include "mlaplan/check/builtin_suite.hpp"

namespace mlaplan::check {

namespace {

Scenario make(const char* name, const char* description, uint32_t p, uint32_t n, uint32_t m,
              std::vector<uint32_t> cache, std::vector<uint32_t> input_lengths, uint32_t base = 0) {
  Scenario s;
  s.name = name;
  s.description = description;
  s.batch.page_size = p;
  s.batch.buffer_token_size = n;
  s.batch.max_chunks = m;
  s.batch.cache_lengths = std::move(cache);
  s.batch.input_row_offsets.assign(1, base);
  for (uint32_t len : input_lengths) s.batch.input_row_offsets.push_back(s.batch.input_row_offsets.back() + len);
  validate_batch(s.batch);
  return s;
}

Scenario infeasible(Scenario s, uint64_t min_max_chunks) {
  s.expected = ExpectedPlan{};
  s.expected->infeasible = true;
  s.expected->min_max_chunks = min_max_chunks;
  return s;
}

}  // namespace

std::vector<Scenario> builtin_edge_cases() {
  std::vector<Scenario> v;
  Scenario worked = make("worked-example", "the worked example of semantics.md", 128, 512, 4, {500, 0, 100}, {9, 200, 20});
  worked.expected = ExpectedPlan{};
  worked.expected->buffer_row_offsets = std::vector<uint32_t>{0, 512, 512, 512, 0, 0, 256, 384, 0, 0, 0, 0, 0, 0, 0, 0};
  worked.expected->cache_offsets = std::vector<uint32_t>{0, 0, 0, 512, 0, 0, 512, 256, 128, 512, 256, 128};
  worked.expected->buffer_lengths = std::vector<int32_t>{512, 384, -1, -1};
  v.push_back(worked);

  Scenario empty = make("empty-batch", "B = 0: buffer_lengths all 0, not -1", 128, 512, 3, {}, {}, 7);
  empty.expected = ExpectedPlan{};
  empty.expected->buffer_lengths = std::vector<int32_t>{0, 0, 0};
  empty.expected->buffer_row_offsets = std::vector<uint32_t>{0, 0, 0};
  v.push_back(empty);

  v.push_back(make("all-empty", "B > 0 and E = 0: every chunk unused", 64, 256, 2, {0, 0, 0}, {0, 0, 0}));
  v.push_back(make("one-token-one-page", "1 token with P = 128 takes 128 rows", 128, 512, 2, {0}, {1}));
  v.push_back(make("zero-length-sequences", "empty sequences first, between and last", 16, 64, 3, {0, 10, 0, 0, 40, 0},
                   {0, 5, 0, 30, 0, 0}));
  v.push_back(make("exact-multiple", "E = 2N: the last used chunk is full (ceil)", 64, 256, 4, {100, 200}, {28, 184}));
  v.push_back(make("at-capacity", "E = M*N exactly: feasible", 32, 96, 3, {40, 0, 100}, {20, 64, 30}));
  v.push_back(infeasible(make("past-capacity", "E = M*N + P: one page too many", 32, 96, 3, {40, 0, 100}, {20, 64, 62}), 4));
  v.push_back(infeasible(
      make("trailing-empty-at-capacity", "E = M*N and an empty sequence would start at M*N", 128, 512, 2, {512, 500, 0},
           {0, 12, 0}),
      3));
  v.push_back(make("empty-at-chunk-boundary", "an empty sequence starting exactly at a chunk boundary, mid-batch", 128, 512,
                   2, {512, 0, 10}, {0, 0, 0}));
  v.push_back(make("buffer-not-page-multiple", "N = 300, P = 128: pages straddle chunks", 128, 300, 5, {130, 0, 250},
                   {0, 100, 6}));
  v.push_back(make("page-size-1", "no padding", 1, 10, 4, {3, 0, 7}, {4, 5, 2}));
  v.push_back(make("base-offset", "input_row_offsets starting at 1000", 128, 512, 4, {500, 0, 100}, {9, 200, 20}, 1000));
  v.push_back(make("long-sequence", "one sequence across 13 chunks", 64, 8192, 16, {100000, 300}, {2000, 40}));
  v.push_back(make("many-chunks", "a single page per chunk over 4096 chunks", 16, 16, 4096, {65536 - 40}, {40}));
  v.push_back(make("32-bit-limits", "E = 2^32 - 1, N = 2^31 - 1, offsets ending at 2^32 - 1", 1, 0x7fffffff, 3,
                   {0xfffffff0u}, {15}, 0xfffffff0u));
  v.push_back(make("single-chunk", "M = 1, a batch that fills it exactly", 8, 64, 1, {7, 8, 9}, {1, 8, 31}));
  return v;
}

}  // namespace mlaplan::check
