// Plans measured for their pictures (lib/render), without a renderer: what measure_plan reads out of
// hand-computed plans, and how lay_out_bar groups narrow pieces. plan_svg_test.cpp checks where
// plan_svg draws them, render_pixels_test.cpp the rendered pixels.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mlaplan/check/scenario.hpp"
#include "mlaplan/policies/policy.hpp"
#include "mlaplan/io/plan_report.hpp"
#include "mlaplan/render/plan_picture.hpp"
#include "mlaplan/render/plan_svg.hpp"
#include "plan_examples.hpp"
#include "svg_checks.hpp"

namespace mlaplan::render {
namespace {

using examples::make_batch;
using examples::make_scenario;
using examples::max_report;
using examples::packed_policy;
using examples::report_or_refusal;
using examples::split_example;
using examples::worked_example;
using mlaplan::test::count;
using mlaplan::test::parser_accepts;

void expect_piece(const Piece& p, uint32_t sequence, uint32_t row_begin, uint32_t row_end, uint64_t token_begin,
                  uint32_t padding, bool continued, bool continues) {
  SCOPED_TRACE("sequence " + std::to_string(sequence) + " rows [" + std::to_string(row_begin) + ", " +
               std::to_string(row_end) + ")");
  EXPECT_EQ(p.sequence, sequence);
  EXPECT_EQ(p.row_begin, row_begin);
  EXPECT_EQ(p.row_end, row_end);
  EXPECT_EQ(p.token_begin, token_begin);
  EXPECT_EQ(p.padding_rows, padding);
  EXPECT_EQ(p.continued, continued);
  EXPECT_EQ(p.continues, continues);
}

// ---------------------------------------------------------------------------------------------
// measure_plan

TEST(PlanPicture, MeasuresTheWorkedExample) {
  const check::Scenario s = worked_example();
  const PlanPicture p = measure_plan(max_report(s));
  EXPECT_EQ(p.scenario, "worked-example");
  EXPECT_EQ(p.policy, "max");
  EXPECT_EQ(p.batch_size, 3u);
  EXPECT_EQ(p.chunks_used, 2u);
  EXPECT_EQ(p.payload_tokens, 829u);  // 509 + 200 + 120
  EXPECT_EQ(p.streamed_rows, 896u);   // 512 + 256 + 128
  EXPECT_EQ(p.padding_rows(), 67u);
  EXPECT_DOUBLE_EQ(p.fill(), 896.0 / 1024.0);
  EXPECT_EQ(p.new_tokens, (std::vector<uint32_t>{9, 200, 20}));
  EXPECT_EQ(p.cache_lengths, (std::vector<uint32_t>{500, 0, 100}));
  ASSERT_EQ(p.chunks.size(), 4u);
  EXPECT_TRUE(p.chunks[0].used);
  EXPECT_EQ(p.chunks[0].rows, 512u);
  ASSERT_EQ(p.chunks[0].pieces.size(), 1u);
  // s0: 509 tokens padded to 512, the last 3 rows padding.
  expect_piece(p.chunks[0].pieces[0], 0, 0, 512, 0, 3, false, false);
  EXPECT_TRUE(p.chunks[1].used);
  EXPECT_EQ(p.chunks[1].rows, 384u);
  ASSERT_EQ(p.chunks[1].pieces.size(), 2u);
  expect_piece(p.chunks[1].pieces[0], 1, 0, 256, 0, 56, false, false);   // 200 tokens padded to 256
  expect_piece(p.chunks[1].pieces[1], 2, 256, 384, 0, 8, false, false);  // 120 tokens padded to 128
  for (uint32_t c : {2u, 3u}) {
    EXPECT_EQ(p.chunks[c].index, c);
    EXPECT_FALSE(p.chunks[c].used) << c;
    EXPECT_EQ(p.chunks[c].rows, 0u) << c;
    EXPECT_TRUE(p.chunks[c].pieces.empty()) << c;
  }
}

TEST(PlanPicture, SequenceSplitAcrossChunksIsContinuedAndContinues) {
  const check::Scenario s = split_example();
  const PlanPicture p = measure_plan(max_report(s));
  // L = [96, 208, 64, 208], S = [0, 96, 304, 368], E = 576: chunks of 256, 256 and 64 rows.
  ASSERT_EQ(p.chunks.size(), 4u);
  EXPECT_EQ(p.chunks_used, 3u);
  EXPECT_EQ(p.chunks[0].rows, 256u);
  EXPECT_EQ(p.chunks[1].rows, 256u);
  EXPECT_EQ(p.chunks[2].rows, 64u);
  EXPECT_FALSE(p.chunks[3].used);
  ASSERT_EQ(p.chunks[0].pieces.size(), 2u);
  expect_piece(p.chunks[0].pieces[0], 0, 0, 96, 0, 6, false, false);      // 90 tokens padded to 96
  expect_piece(p.chunks[0].pieces[1], 1, 96, 256, 0, 0, false, true);     // s1's first 160 tokens
  ASSERT_EQ(p.chunks[1].pieces.size(), 3u);
  expect_piece(p.chunks[1].pieces[0], 1, 0, 48, 160, 8, true, false);     // the rest: 40 tokens + 8 padding
  expect_piece(p.chunks[1].pieces[1], 2, 48, 112, 0, 14, false, false);   // 50 tokens padded to 64
  expect_piece(p.chunks[1].pieces[2], 3, 112, 256, 0, 0, false, true);
  ASSERT_EQ(p.chunks[2].pieces.size(), 1u);
  expect_piece(p.chunks[2].pieces[0], 3, 0, 64, 144, 8, true, false);
  EXPECT_EQ(p.padding_rows(), 36u);
}

TEST(PlanPicture, PagesStraddlingChunksAndEmptySequences) {
  // N = 100 is not a multiple of P = 128: s0's one token is padded to a page that straddles chunks
  // 0 and 1, so its piece in chunk 1 is padding alone; s1 is empty and has no piece anywhere.
  const check::Scenario s = make_scenario("straddle", make_batch(128, 100, 4, {1, 0, 50}, {0, 0, 0}));
  const PlanPicture p = measure_plan(max_report(s));
  ASSERT_EQ(p.chunks.size(), 4u);
  EXPECT_EQ(p.chunks_used, 3u);
  ASSERT_EQ(p.chunks[0].pieces.size(), 1u);
  expect_piece(p.chunks[0].pieces[0], 0, 0, 100, 0, 99, false, true);
  ASSERT_EQ(p.chunks[1].pieces.size(), 2u);
  expect_piece(p.chunks[1].pieces[0], 0, 0, 28, 100, 28, true, false);
  expect_piece(p.chunks[1].pieces[1], 2, 28, 100, 0, 22, false, true);
  ASSERT_EQ(p.chunks[2].pieces.size(), 1u);
  expect_piece(p.chunks[2].pieces[0], 2, 0, 56, 72, 56, true, false);
  EXPECT_EQ(p.chunks[2].rows, 56u);
  EXPECT_FALSE(p.chunks[3].used);
  for (const ChunkPicture& c : p.chunks)
    for (const Piece& q : c.pieces) EXPECT_NE(q.sequence, 1u) << "the empty sequence drew a piece in chunk " << c.index;
  // Padding per piece adds up to the plan's padding.
  uint64_t padding = 0;
  for (const ChunkPicture& c : p.chunks)
    for (const Piece& q : c.pieces) padding += q.padding_rows;
  EXPECT_EQ(padding, p.padding_rows());
}

TEST(PlanPicture, OtherPoliciesStreamTheCachedContextWithoutPadding) {
  const check::Scenario s = split_example();
  const PlanPicture p = measure_plan(report_or_refusal(s, packed_policy()));
  EXPECT_EQ(p.policy, "packed");
  EXPECT_EQ(p.payload_tokens, 520u);
  EXPECT_EQ(p.streamed_rows, 520u);
  EXPECT_EQ(p.padding_rows(), 0u);
  EXPECT_EQ(p.new_tokens, (std::vector<uint32_t>{0, 0, 0, 0}));
  ASSERT_EQ(p.chunks_used, 3u);
  // vLLM packs the cached context in order, splitting at page multiples: 80 + 176 | 14 + 50 + 192 | 8.
  ASSERT_EQ(p.chunks[0].pieces.size(), 2u);
  expect_piece(p.chunks[0].pieces[0], 0, 0, 80, 0, 0, false, false);
  expect_piece(p.chunks[0].pieces[1], 1, 80, 256, 0, 0, false, true);
  ASSERT_EQ(p.chunks[1].pieces.size(), 3u);
  expect_piece(p.chunks[1].pieces[0], 1, 0, 14, 176, 0, true, false);
  expect_piece(p.chunks[1].pieces[1], 2, 14, 64, 0, 0, false, false);
  expect_piece(p.chunks[1].pieces[2], 3, 64, 256, 0, 0, false, true);
  ASSERT_EQ(p.chunks[2].pieces.size(), 1u);
  expect_piece(p.chunks[2].pieces[0], 3, 0, 8, 192, 0, true, false);
  EXPECT_EQ(p.chunks[2].rows, 8u);
}

TEST(PlanPicture, RefusedPlanHasNoChunksAndDrawsTheReason) {
  const check::Scenario s = make_scenario("too-big", make_batch(1, 100, 1, {150}, {0}));
  io::PlanReport r;
  r.scenario = &s;
  r.refused = "max_chunks: 1 is too few <for> this batch & needs 2";
  const PlanPicture p = measure_plan(r);
  EXPECT_EQ(p.refused, r.refused);
  EXPECT_TRUE(p.chunks.empty());
  EXPECT_EQ(p.chunks_used, 0u);
  EXPECT_EQ(p.cache_lengths, (std::vector<uint32_t>{150}));
  const std::string svg = plan_svg({p});
  EXPECT_NE(svg.find("refused: max_chunks: 1 is too few &lt;for&gt; this batch &amp; needs 2"), std::string::npos) << svg;
  EXPECT_EQ(count(svg, "<title>sequence "), 0u);
  if (const auto ok = parser_accepts(svg)) EXPECT_TRUE(*ok);
}

// ---------------------------------------------------------------------------------------------
// lay_out_bar

ChunkPicture chunk_of(const std::vector<uint32_t>& rows, const std::vector<uint32_t>& padding = {}) {
  ChunkPicture c;
  c.used = true;
  uint32_t at = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    Piece p;
    p.sequence = static_cast<uint32_t>(i);
    p.row_begin = at;
    p.row_end = at += rows[i];
    p.padding_rows = i < padding.size() ? padding[i] : 0;
    c.pieces.push_back(p);
  }
  c.rows = at;
  return c;
}

TEST(LayOutBar, RunOfNarrowPiecesIsOneGroup) {
  // At 1 px per row and 4 px minimum: 10 | 1 2 3 1 | 10.
  const ChunkPicture c = chunk_of({10, 1, 2, 3, 1, 10}, {0, 1, 0, 2, 1, 0});
  const std::vector<BarItem> items = lay_out_bar(c, 1.0, 4.0);
  ASSERT_EQ(items.size(), 3u);
  EXPECT_FALSE(items[0].grouped());
  EXPECT_TRUE(items[1].grouped());
  EXPECT_EQ(items[1].first, 1u);
  EXPECT_EQ(items[1].last, 4u);
  EXPECT_EQ(items[1].row_begin, 10u);
  EXPECT_EQ(items[1].row_end, 17u);
  EXPECT_EQ(items[1].padding_rows, 4u);
  EXPECT_FALSE(items[2].grouped());
  EXPECT_EQ(items[2].first, 5u);
  EXPECT_EQ(items[2].row_begin, 17u);
  EXPECT_EQ(items[2].row_end, 27u);
}

TEST(LayOutBar, LoneNarrowPieceBetweenWideOnesStaysItself) {
  const ChunkPicture c = chunk_of({10, 1, 10, 2, 10});
  const std::vector<BarItem> items = lay_out_bar(c, 1.0, 4.0);
  ASSERT_EQ(items.size(), 5u);
  for (size_t i = 0; i < items.size(); ++i) {
    EXPECT_FALSE(items[i].grouped()) << i;
    EXPECT_EQ(items[i].first, i);
    EXPECT_EQ(items[i].row_begin, c.pieces[i].row_begin);
    EXPECT_EQ(items[i].row_end, c.pieces[i].row_end);
  }
}

TEST(LayOutBar, WidePiecesStayAloneAndTheScaleDecides) {
  const ChunkPicture c = chunk_of({4, 5, 100, 4});
  EXPECT_EQ(lay_out_bar(c, 1.0, 4.0).size(), 4u);  // exactly 4 px is wide enough
  // At a quarter of a px per row only the 100-row piece is wide: 4 5 | 100 | 4.
  const std::vector<BarItem> items = lay_out_bar(c, 0.25, 4.0);
  ASSERT_EQ(items.size(), 3u);
  EXPECT_TRUE(items[0].grouped());
  EXPECT_EQ(items[0].row_end, 9u);
  EXPECT_FALSE(items[1].grouped());
  EXPECT_FALSE(items[2].grouped());  // a narrow piece at the end, alone
  // Everything narrow: one group over the whole chunk.
  const std::vector<BarItem> one = lay_out_bar(chunk_of(std::vector<uint32_t>(1000, 1)), 0.5, 4.0);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].first, 0u);
  EXPECT_EQ(one[0].last, 999u);
  EXPECT_EQ(one[0].row_end, 1000u);
  EXPECT_TRUE(lay_out_bar(ChunkPicture{}, 1.0, 4.0).empty());
}

}  // namespace
}  // namespace mlaplan::render
