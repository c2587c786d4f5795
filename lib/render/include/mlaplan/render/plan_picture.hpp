// What a picture of a plan shows, measured from the report before anything is drawn (plan_svg.hpp
// draws it): per chunk, the pieces of sequences it holds, their cache ranges and page padding; and,
// for a given scale, which pieces are wide enough to draw one by one and which are grouped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mlaplan/io/plan_report.hpp"

namespace mlaplan::render {

// One sequence's rows in one chunk.
struct Piece {
  uint32_t sequence = 0;
  uint32_t row_begin = 0, row_end = 0;  // buffer rows [row_begin, row_end)
  uint64_t token_begin = 0;             // the first of its tokens these rows hold (cache_offset)
  uint32_t padding_rows = 0;            // rows at the end that are page padding, not tokens
  bool continued = false;               // an earlier chunk holds the start of this sequence
  bool continues = false;               // a later chunk holds more of it

  uint32_t rows() const { return row_end - row_begin; }
};

struct ChunkPicture {
  uint32_t index = 0;
  bool used = false;
  uint32_t rows = 0;  // the chunk's length
  std::vector<Piece> pieces;
  // With a cost file, where the plan's loop runs and is timed chunk by chunk (TimeFigures::chunk_us):
  // the chunk's share of the predicted step, in ms.
  std::optional<double> ms;
};

// One plan: a panel of a picture.
struct PlanPicture {
  std::string scenario;     // the scenario's name (drawn escaped and clipped)
  std::string policy;       // "max", "packed", ...
  std::string planner;      // "gpu-fast", "cpu-packed", ...
  uint32_t batch_size = 0, page_size = 0, buffer_token_size = 0, max_chunks = 0;
  uint64_t chunks_used = 0;
  uint64_t payload_tokens = 0;  // what the policy streams: cache + new (max) or cached context
  uint64_t streamed_rows = 0;   // rows written over all chunks, padding included
  std::optional<io::MemoryFigures> memory;
  std::string refused;          // set: the policy cannot plan the batch, and why
  std::vector<uint32_t> cache_lengths;  // per sequence, for the tooltips
  std::vector<uint32_t> new_tokens;     // per sequence: its input rows under max, 0 under the others
  std::vector<ChunkPicture> chunks;  // one per table row
  // With a cost file (run --cost, --gpu): the predicted step, the path the GPU runs and the GPU.
  std::optional<double> step_ms;
  std::string path, gpu;

  uint64_t padding_rows() const { return streamed_rows - payload_tokens; }
  // Whether each used chunk has its time (ChunkPicture::ms), and their sum.
  bool timed_chunks() const { return chunks_used > 0 && !chunks.empty() && chunks.front().ms.has_value(); }
  double chunks_ms(size_t from = 0) const;
  // Rows written over the rows the used chunks offer, in [0, 1].
  double fill() const;
};

// "283.5 ms/step", with its path where the GPU runs the context whole ("205.3 ms/step (one-shot)"):
// a panel's predicted time; "" without one.
std::string step_time_text(const PlanPicture& p);

// Measures a planned report (or a refused one: its `refused` set and no tables).
PlanPicture measure_plan(const io::PlanReport& report);

// What one bar draws at a scale: a piece on its own, or a run of neighbouring pieces each too narrow
// to tell apart, drawn as one group.
struct BarItem {
  size_t first = 0, last = 0;  // indices into ChunkPicture::pieces, inclusive
  uint32_t row_begin = 0, row_end = 0;
  uint64_t padding_rows = 0;
  bool grouped() const { return last > first; }
};

// Pieces narrower than `min_width_px` at `px_per_row` are merged with their narrow neighbours; a
// narrow piece alone between wide ones stays itself (it is drawn, only without a label).
std::vector<BarItem> lay_out_bar(const ChunkPicture& chunk, double px_per_row, double min_width_px);

}  // namespace mlaplan::render
