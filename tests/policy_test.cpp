// The engines' chunking policies against hand-computed plans, the published examples among them,
// and the invariant checker against random batches and corrupted tables.
#include <gtest/gtest.h>

#include <random>

#include "mlaplan/check/batch_generator.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/policies/policy.hpp"
#include "mlaplan/policies/policy_check.hpp"
#include "test_batches.hpp"

namespace mlaplan::policies {

namespace {

using test::make_batch;

// A batch of contexts with one new token each (the new tokens do not enter the context policies).
Batch contexts(uint32_t page, uint32_t buffer, std::vector<uint32_t> ctx, uint32_t max_chunks = 16) {
  std::vector<uint32_t> offsets(ctx.size() + 1);
  for (size_t i = 0; i <= ctx.size(); ++i) offsets[i] = static_cast<uint32_t>(i);
  return make_batch(page, buffer, max_chunks, std::move(ctx), std::move(offsets));
}

Policy packed() { return {PolicyKind::packed}; }
Policy packed_trtllm() {
  Policy p{PolicyKind::packed};
  p.packed = PackedVariant::trtllm;
  return p;
}
Policy even(EvenSplitVariant v) {
  Policy p{PolicyKind::even_split};
  p.even_split = v;
  return p;
}

Policy waves() { return {PolicyKind::waves}; }

// Plans, checks the invariants and returns the plan.
PolicyPlan checked(const Batch& b, const Policy& p) {
  PolicyPlan plan = plan_policy(b, p);
  const InvariantReport r = check_policy_invariants(b, p, plan.tables, plan.outcome.chunks);
  EXPECT_TRUE(r.ok()) << p.name() << ": " << (r.messages.empty() ? "" : r.messages.front());
  EXPECT_EQ(policy_outcome(b, p).chunks, plan.outcome.chunks) << "the counting walk and the tables disagree";
  return plan;
}

// Rows of sequence `s` in chunk `c`: [lo, hi) and the first token.
struct Piece {
  uint32_t lo, hi, from;
  bool operator==(const Piece& o) const { return lo == o.lo && hi == o.hi && from == o.from; }
};
Piece piece(const PlanTables& t, uint32_t c, uint32_t s) { return {t.row_offset(c, s), t.row_offset(c, s + 1), t.cache_offset(c, s)}; }

// vLLM PR 50613: "1 request has 60k context and rest have 16 ... the workspace (65,536 tok) gets
// divided evenly among the requests, so it uses 30 chunks"; packing needs one.
TEST(PolicyPublished, SixtyThousandPlusThirtyOneShortContexts) {
  std::vector<uint32_t> ctx(32, 16);
  ctx[0] = 60000;
  const Batch b = contexts(16, 65536, ctx);
  // 65,536 / 32 = 2,048 rows each (a page multiple); ceil(60,000 / 2,048) = 30.
  EXPECT_EQ(checked(b, even(EvenSplitVariant::vllm)).outcome.chunks, 30u);
  const PolicyPlan p = checked(b, packed());
  EXPECT_EQ(p.outcome.chunks, 1u);
  EXPECT_EQ(p.tables.buffer_lengths[0], 60000 + 31 * 16);
}

// vLLM RFC 50497: "a 64k workspace and contexts [60k, 1k x 7], mcc = 8k": 8 chunks under the even split.
TEST(PolicyPublished, SixtyThousandPlusSevenThousands) {
  const Batch b = contexts(16, 65536, {60000, 1000, 1000, 1000, 1000, 1000, 1000, 1000});
  const PolicyPlan e = checked(b, even(EvenSplitVariant::vllm));
  EXPECT_EQ(e.outcome.chunks, 8u);  // share 65,536 / 8 = 8,192; ceil(60,000 / 8,192) = 8
  EXPECT_EQ(piece(e.tables, 0, 1), (Piece{8192, 9192, 0}));
  EXPECT_EQ(piece(e.tables, 7, 0), (Piece{0, 60000 - 7 * 8192, 7 * 8192}));
  // Packed, by hand: 60,000 + 5 x 1,000 = 65,000 rows; the sixth 1,000 does not fit in the 536 left,
  // so it splits at round_down(536, 16) = 528; chunk 1 holds its other 472 and the seventh 1,000.
  const PolicyPlan p = checked(b, packed());
  EXPECT_EQ(p.outcome.chunks, 2u);
  EXPECT_EQ(p.tables.buffer_lengths[0], 65528);
  EXPECT_EQ(piece(p.tables, 0, 6), (Piece{65000, 65528, 0}));
  EXPECT_EQ(piece(p.tables, 1, 6), (Piece{0, 472, 528}));
  EXPECT_EQ(piece(p.tables, 1, 7), (Piece{472, 1472, 0}));
  EXPECT_EQ(p.tables.buffer_lengths[1], 1472);
}

// SGLang's unit test of the chunked prefix cache (case "Sequence with irregular shapes"): prefix lengths [1, 64],
// capacity 31: prefix_chunk_len 31 // 2 = 15, five chunks, seq lens [[1,15],[0,15],[0,15],[0,15],[0,4]].
TEST(PolicyPublished, SglangIrregularShapes) {
  const Batch b = contexts(1, 31, {1, 64});
  const PolicyPlan p = checked(b, even(EvenSplitVariant::sglang));
  ASSERT_EQ(p.outcome.chunks, 5u);
  const std::vector<std::pair<uint32_t, uint32_t>> lens{{1, 15}, {0, 15}, {0, 15}, {0, 15}, {0, 4}};
  for (uint32_t c = 0; c < 5; ++c) {
    EXPECT_EQ(piece(p.tables, c, 0).hi - piece(p.tables, c, 0).lo, lens[c].first) << "chunk " << c;
    EXPECT_EQ(piece(p.tables, c, 1).hi - piece(p.tables, c, 1).lo, lens[c].second) << "chunk " << c;
    EXPECT_EQ(piece(p.tables, c, 1).from, 15 * c);
  }
}

// By hand: page 16, W = 64, contexts [100, 50]. Chunk 0: 100 does not fit, split at min(64, round_down(99, 16))
// = 64. Chunk 1: the other 36, then 50 does not fit in 28: split at round_down(28, 16) = 16. Chunk 2: 34.
TEST(PolicyByHand, PackedSplitsAtPageMultiples) {
  const Batch b = contexts(16, 64, {100, 50});
  const PolicyPlan p = checked(b, packed());
  ASSERT_EQ(p.outcome.chunks, 3u);
  EXPECT_EQ(piece(p.tables, 0, 0), (Piece{0, 64, 0}));
  EXPECT_EQ(piece(p.tables, 1, 0), (Piece{0, 36, 64}));
  EXPECT_EQ(piece(p.tables, 1, 1), (Piece{36, 52, 0}));
  EXPECT_EQ(piece(p.tables, 2, 1), (Piece{0, 34, 16}));
  EXPECT_EQ(p.tables.buffer_lengths[2], 34);
  EXPECT_EQ(p.tables.buffer_lengths[3], -1);  // max_chunks rows are kept; the rest unused
  // Without alignment the second chunk fills up: 36 + 28, then 22.
  Policy a1 = packed();
  a1.split_align = 1;
  const PolicyPlan q = checked(b, a1);
  EXPECT_EQ(q.outcome.chunks, 3u);
  EXPECT_EQ(piece(q.tables, 1, 1), (Piece{36, 64, 0}));
  EXPECT_EQ(piece(q.tables, 2, 1), (Piece{0, 22, 28}));
}

// By hand: a request without context ends vLLM's chunk, and TensorRT-LLM skips it: contexts
// [10, 0, 10] in 20 rows take 2 chunks under vLLM (even unaligned) and 1 under TensorRT-LLM.
TEST(PolicyByHand, RequestWithoutContextEndsVllmChunkOnly) {
  const Batch b = contexts(1, 20, {10, 0, 10});
  Policy a1 = packed();
  a1.split_align = 1;
  EXPECT_EQ(checked(b, a1).outcome.chunks, 2u);
  const PolicyPlan t = checked(b, packed_trtllm());
  EXPECT_EQ(t.outcome.chunks, 1u);
  EXPECT_EQ(piece(t.tables, 0, 2), (Piece{10, 20, 0}));
}

// By hand: contexts [0, 100, 40], W = 128, page 16. vLLM shares among the 2 with context: 64 rows,
// ceil(100 / 64) = 2 chunks. SGLang shares among all 3: 42 rows, ceil(100 / 42) = 3 chunks.
TEST(PolicyByHand, EvenSplitVariantsCountDifferentSequences) {
  const Batch b = contexts(16, 128, {0, 100, 40});
  const PolicyPlan v = checked(b, even(EvenSplitVariant::vllm));
  EXPECT_EQ(v.outcome.chunks, 2u);
  EXPECT_EQ(piece(v.tables, 0, 2), (Piece{64, 104, 0}));
  EXPECT_EQ(piece(v.tables, 1, 1), (Piece{0, 36, 64}));
  const PolicyPlan s = checked(b, even(EvenSplitVariant::sglang));
  EXPECT_EQ(s.outcome.chunks, 3u);
  EXPECT_EQ(piece(s.tables, 2, 1), (Piece{0, 16, 84}));
}

// By hand: the worked example under max is the seed's plan (2 chunks of 512 + 384 padded rows) and its
// context alone (600 tokens) packs into 2 chunks of 512 rows (512 + 88, split at a page multiple).
TEST(PolicyByHand, WorkedExampleUnderEveryPolicy) {
  const Batch b = test::worked_example_batch();
  const PolicyPlan m = checked(b, Policy{});
  EXPECT_EQ(m.outcome.chunks, 2u);
  EXPECT_EQ(m.outcome.streamed_rows, 896u);
  EXPECT_EQ(m.outcome.payload_tokens, 829u);
  EXPECT_EQ(m.tables.buffer_lengths, (std::vector<int32_t>{512, 384, -1, -1}));
  // 500 + 100 context: 500 fits, 100 does not fit in the 12 left (round_down(12, 128) = 0): chunk 1.
  const PolicyPlan p = checked(b, packed());
  EXPECT_EQ(p.outcome.chunks, 2u);
  EXPECT_EQ(piece(p.tables, 1, 2), (Piece{0, 100, 0}));
  EXPECT_EQ(checked(b, packed_trtllm()).outcome.chunks, 2u);  // ceil(600 / 512)
}

TEST(PolicyRefusals, NameTheFix) {
  // 32 rows over 3 contexts: 10 each, rounded down to 16-token pages is 0: vLLM asserts.
  const Batch b = contexts(16, 32, {5, 5, 5});
  const PolicyOutcome o = policy_outcome(b, even(EvenSplitVariant::vllm));
  EXPECT_TRUE(o.refused);
  EXPECT_NE(o.why.find("at least 48"), std::string::npos) << o.why;
  EXPECT_THROW(plan_policy(b, even(EvenSplitVariant::vllm)), InputError);
  EXPECT_FALSE(policy_outcome(b, even(EvenSplitVariant::sglang)).refused);  // 10 rows each, no rounding
  // A buffer below the split alignment cannot hold one aligned piece.
  EXPECT_TRUE(policy_outcome(contexts(128, 64, {500}), packed()).refused);
  // max past max_chunks reports the chunks it needs.
  const PolicyOutcome m = policy_outcome(contexts(1, 10, {95}, 4), Policy{});
  EXPECT_TRUE(m.refused);
  EXPECT_EQ(m.chunks, 10u);  // 95 + 1 new token = 96 rows in chunks of 10
  EXPECT_THROW(plan_policy(contexts(1, 10, {95}, 4), Policy{}), InfeasibleBatch);
}

TEST(PolicyNames, ParseAndName) {
  EXPECT_EQ(parse_policy_kind("even-split"), PolicyKind::even_split);
  EXPECT_THROW(parse_policy_kind("evensplit"), InputError);
  EXPECT_EQ(parse_policies("all", Policy{}).size(), 5u);  // the three algorithms, SGLang and TensorRT-LLM
  EXPECT_EQ(parse_policies("packed,max,packed", Policy{}).size(), 2u);
  EXPECT_EQ(packed_trtllm().name(), "packed/trtllm");
  EXPECT_EQ(even(EvenSplitVariant::sglang).name(), "even-split/sglang");
}

TEST(PolicyNames, ListsOfKindsAndVariants) {
  auto names = [](const std::vector<Policy>& ps) {
    std::vector<std::string> out;
    for (const Policy& p : ps) out.push_back(p.name());
    return out;
  };
  Policy defaults;
  EXPECT_EQ(names(parse_policies("all", defaults)), (std::vector<std::string>{"max", "packed", "even-split/vllm",
                                                                             "sglang (even split)",
                                                                             "trtllm (packed/trtllm)"}));
  EXPECT_EQ(names(parse_policies("variants", defaults)),
            (std::vector<std::string>{"max", "packed", "packed/trtllm", "even-split/vllm", "even-split/sglang"}));
  // A kind takes its variant from the defaults; a named variant overrides them.
  defaults.even_split = EvenSplitVariant::sglang;
  defaults.split_align = 64;
  EXPECT_EQ(names(parse_policies("even-split,packed,packed/trtllm,even-split/vllm", defaults)),
            (std::vector<std::string>{"even-split/sglang", "packed/align-64", "packed/trtllm", "even-split/vllm"}));
  // Repeats by name are dropped, in first-seen order.
  EXPECT_EQ(names(parse_policies("packed/trtllm,max,packed/trtllm,max", Policy{})),
            (std::vector<std::string>{"packed/trtllm", "max"}));
  EXPECT_THROW(parse_policies("max/vllm", Policy{}), InputError);
  EXPECT_THROW(parse_policies("packed/sglang", Policy{}), InputError);
  EXPECT_THROW(parse_policies("max,", Policy{}), InputError);  // an empty name is no policy
  try {
    parse_policies("packed/x", Policy{}, "--policy");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--policy packed/x: unknown variant 'x'"), std::string::npos) << e.what();
  }
}

// Every policy's plan keeps its invariants on the generator's batches, and the counting walk agrees
// with the tables.
TEST(PolicyInvariants, HoldOnRandomBatches) {
  const std::vector<Policy> policies{Policy{}, packed(), packed_trtllm(), even(EvenSplitVariant::vllm),
                                     even(EvenSplitVariant::sglang), waves()};
  check::BatchGeneratorOptions options;
  options.large_batch_size = 256;
  options.max_chunks = 64;
  check::BatchGenerator gen(7, options);
  size_t planned = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string shape;
    const Batch batch = gen.next(&shape);
    for (const Policy& p : policies) {
      const PolicyOutcome o = policy_outcome(batch, p);
      if (o.refused || o.chunks > 4096) continue;
      const PolicyPlan plan = plan_policy(batch, p);
      const InvariantReport r = check_policy_invariants(batch, p, plan.tables, plan.outcome.chunks);
      ASSERT_TRUE(r.ok()) << p.name() << " on " << shape << ": " << r.messages.front();
      ASSERT_EQ(plan.outcome.chunks, o.chunks);
      ASSERT_LE(o.largest_chunk, batch.buffer_token_size);
      ++planned;
    }
  }
  EXPECT_GT(planned, 5000u);
}

// The checker can fail: each corruption is caught.
TEST(PolicyInvariants, CatchCorruptedTables) {
  const Batch b = contexts(16, 64, {100, 50});
  const Policy p = packed();
  const PolicyPlan good = plan_policy(b, p);
  auto broken = [&](auto mutate) {
    PlanTables t = good.tables;
    mutate(t);
    return check_policy_invariants(b, p, t, good.outcome.chunks);
  };
  EXPECT_FALSE(broken([](PlanTables& t) { t.row_offset(1, 1) += 1; }).ok());         // a gap between pieces
  EXPECT_FALSE(broken([](PlanTables& t) { t.cache_offset(2, 1) = 0; }).ok());        // a token streamed twice
  EXPECT_FALSE(broken([](PlanTables& t) { t.buffer_lengths[3] = 0; }).ok());         // an unused chunk with a length
  EXPECT_FALSE(broken([](PlanTables& t) { t.buffer_lengths[0] = 65; }).ok());        // over the buffer
  EXPECT_FALSE(check_policy_invariants(b, p, good.tables, 2).ok());                   // a chunk not counted
}

// waves: sequences whose blocks (16 heads x query tiles of 128) fill less than 90% of the waves of 132
// slots stream as a group, each chunk's rows shared in proportion to what each has left.
TEST(PolicyWaves, NarrowSequencesShareEveryChunkInProportion) {
  // One new token each: 16 blocks apiece, a group of both; 500 rows shared 250 / 250, four times.
  const PolicyPlan even_group = checked(contexts(1, 500, {1000, 1000}), waves());
  ASSERT_EQ(even_group.outcome.chunks, 4u);
  for (uint32_t c = 0; c < 4; ++c) {
    EXPECT_EQ(piece(even_group.tables, c, 0), (Piece{0, 250, 250 * c}));
    EXPECT_EQ(piece(even_group.tables, c, 1), (Piece{250, 500, 250 * c}));
  }
  // 300 and 100 left in 200 rows: 150 + 50, then the same again; both end in chunk 1.
  const PolicyPlan uneven = checked(contexts(1, 200, {300, 100}), waves());
  ASSERT_EQ(uneven.outcome.chunks, 2u);
  EXPECT_EQ(piece(uneven.tables, 0, 0), (Piece{0, 150, 0}));
  EXPECT_EQ(piece(uneven.tables, 0, 1), (Piece{150, 200, 0}));
  EXPECT_EQ(piece(uneven.tables, 1, 0), (Piece{0, 150, 150}));
  EXPECT_EQ(piece(uneven.tables, 1, 1), (Piece{150, 200, 50}));
}

TEST(PolicyWaves, AWideSequenceStreamsAloneAsPacked) {
  // 2,048 new tokens: 16 tiles x 16 heads = 256 blocks, 97% of two waves: alone, as packed streams it.
  const Batch b = make_batch(1, 500, 16, {600, 600}, {0, 2048, 2049});
  const PolicyPlan p = checked(b, waves());
  ASSERT_EQ(p.outcome.chunks, 3u);  // ceil(1,200 / 500): every chunk full but the last
  EXPECT_EQ(piece(p.tables, 0, 0), (Piece{0, 500, 0}));
  EXPECT_EQ(piece(p.tables, 1, 0), (Piece{0, 100, 500}));
  EXPECT_EQ(piece(p.tables, 1, 1), (Piece{100, 500, 0}));
  EXPECT_EQ(piece(p.tables, 2, 1), (Piece{0, 200, 400}));
  // A narrower launch shape makes the same sequence narrow: 8 heads x 16 tiles = 128 blocks of 264.
  Policy narrow = waves();
  narrow.waves_heads = 8;
  narrow.waves_slots = 264;
  const PolicyPlan q = checked(b, narrow);
  EXPECT_EQ(piece(q.tables, 0, 0), (Piece{0, 250, 0}));
  EXPECT_EQ(piece(q.tables, 0, 1), (Piece{250, 500, 0}));
}

// On random batches: every chunk is full but the last (ceil(context / W) chunks, fewer than packed
// can take), and the members of a group end in the same chunk.
TEST(PolicyWaves, FullChunksOnRandomBatches) {
  check::BatchGeneratorOptions options;
  options.large_batch_size = 64;
  options.max_chunks = 64;
  check::BatchGenerator gen(36, options);
  size_t planned = 0, shared = 0;
  for (int i = 0; i < 2000; ++i) {
    const Batch batch = gen.next();
    uint64_t context = 0;
    for (uint32_t len : batch.cache_lengths) context += len;
    const PolicyOutcome o = policy_outcome(batch, waves());
    if (o.refused || o.chunks > 4096) continue;
    const PolicyPlan plan = checked(batch, waves());
    ASSERT_EQ(plan.outcome.chunks, (context + batch.buffer_token_size - 1) / batch.buffer_token_size);
    for (uint64_t c = 0; c + 1 < plan.outcome.chunks; ++c)
      ASSERT_EQ(plan.tables.buffer_lengths[c], static_cast<int32_t>(batch.buffer_token_size)) << "chunk " << c;
    const PolicyOutcome packed_o = policy_outcome(batch, packed());
    if (!packed_o.refused) ASSERT_LE(o.chunks, packed_o.chunks);
    for (uint64_t c = 0; c < plan.outcome.chunks; ++c) {
      uint32_t in = 0;
      for (uint32_t s = 0; s < batch.batch_size(); ++s)
        in += plan.tables.row_offset(static_cast<uint32_t>(c), s + 1) > plan.tables.row_offset(static_cast<uint32_t>(c), s);
      shared += in > 2;
    }
    ++planned;
  }
  EXPECT_GT(planned, 1000u);
  EXPECT_GT(shared, 100u);  // groups of three and more: the shares are exercised
}

TEST(PolicyWaves, ShapeByName) {
  EXPECT_EQ(waves().name(), "waves");
  const Policy p = parse_policies("waves/h128-s132", Policy{}).front();
  EXPECT_EQ(p.kind, PolicyKind::waves);
  EXPECT_EQ(p.waves_heads, 128u);
  EXPECT_EQ(p.waves_slots, 132u);
  EXPECT_EQ(p.name(), "waves/h128-s132");
  EXPECT_EQ(parse_policies("waves/h16-s264-t64", Policy{}).front().name(), "waves/h16-s264-t64");
  EXPECT_EQ(parse_policies("waves/h16-s132", Policy{}).front().name(), "waves");
  // The engines' variant options, given for another policy of the list, leave waves as it is.
  Policy trtllm_defaults;
  trtllm_defaults.packed = PackedVariant::trtllm;
  trtllm_defaults.split_align = 64;
  trtllm_defaults.even_split = EvenSplitVariant::sglang;
  const Policy w = parse_policies("packed,waves", trtllm_defaults).back();
  EXPECT_EQ(w.packed, PackedVariant::vllm);
  EXPECT_EQ(w.split_align, 0u);
  EXPECT_EQ(w.even_split, EvenSplitVariant::vllm);
  for (const char* bad : {"waves/x", "waves/h0-s132", "waves/h16", "waves/h16-s132-", "waves/h16-s99999999", "waves/s1-h1"})
    EXPECT_THROW(parse_policies(bad, Policy{}), InputError) << bad;
}

}  // namespace
}  // namespace mlaplan::policies
