#include "mlaplan/render/plan_picture.hpp"

#include <algorithm>

#include "mlaplan/sweeps/recommend.hpp"

namespace mlaplan::render {

double PlanPicture::fill() const {
  const double offered = static_cast<double>(chunks_used) * buffer_token_size;
  return offered > 0 ? static_cast<double>(streamed_rows) / offered : 0.0;
}

double PlanPicture::chunks_ms(size_t from) const {
  double ms = 0;
  for (size_t c = from; c < chunks.size(); ++c) ms += chunks[c].ms.value_or(0.0);
  return ms;
}

std::string step_time_text(const PlanPicture& p) {
  if (!p.step_ms) return "";
  return sweeps::format_ms(*p.step_ms) + "/step" + (p.path == "chunked" ? "" : " (" + p.path + ")");
}

PlanPicture measure_plan(const io::PlanReport& r) {
  PlanPicture p;
  const Batch& b = r.scenario->batch;
  p.scenario = r.scenario->name;
  p.policy = r.policy;
  p.planner = r.planner;
  p.batch_size = b.batch_size();
  p.page_size = b.page_size;
  p.buffer_token_size = b.buffer_token_size;
  p.max_chunks = b.max_chunks;
  p.memory = r.memory;
  p.refused = r.refused;
  if (r.time && r.refused.empty()) {
    p.step_ms = r.time->step_ms(r.time->layer_us);
    p.path = r.time->path;
    p.gpu = r.time->gpu;
  }
  p.cache_lengths = b.cache_lengths;
  p.new_tokens.assign(b.batch_size(), 0);
  if (!r.refused.empty()) return p;
  p.chunks_used = r.shape.chunks_used;
  p.payload_tokens = r.shape.input_tokens;
  p.streamed_rows = r.shape.padded_tokens;

  // max streams cache + new tokens padded to whole pages; the other policies the cached context alone.
  const bool with_new_tokens = r.policy == "max";
  const PlanTables& t = r.tables;
  const uint32_t B = t.batch_size;
  std::vector<uint64_t> content(B), total(B);
  for (uint32_t q = 0; q < B; ++q) {
    if (with_new_tokens) p.new_tokens[q] = b.input_length(q);
    content[q] = with_new_tokens ? uint64_t{b.cache_lengths[q]} + b.input_length(q) : b.cache_lengths[q];
    total[q] = with_new_tokens ? b.padded_length(q) : b.cache_lengths[q];
  }
  p.chunks.resize(t.max_chunks);
  for (uint32_t c = 0; c < t.max_chunks; ++c) {
    ChunkPicture& chunk = p.chunks[c];
    chunk.index = c;
    chunk.used = c < p.chunks_used;
    chunk.rows = chunk.used ? static_cast<uint32_t>(std::max(t.buffer_lengths[c], 0)) : 0;
    if (!chunk.used) continue;
    // The model's chunks are the tables' used rows, in order; a count that differs is left untimed.
    if (r.time && r.time->chunk_us.size() == p.chunks_used) chunk.ms = r.time->step_ms(r.time->chunk_us[c]);
    for (uint32_t q = 0; q < B; ++q) {
      const uint32_t lo = t.row_offset(c, q), hi = t.row_offset(c, q + 1);
      if (hi <= lo) continue;
      Piece piece;
      piece.sequence = q;
      piece.row_begin = lo;
      piece.row_end = hi;
      piece.token_begin = t.cache_offset(c, q);
      const uint64_t token_end = piece.token_begin + (hi - lo);
      // Positions at or past the sequence's content are the padding of its last page.
      const uint64_t pad_from = std::max(piece.token_begin, content[q]);
      piece.padding_rows = token_end > pad_from ? static_cast<uint32_t>(token_end - pad_from) : 0;
      piece.continued = piece.token_begin > 0;
      piece.continues = token_end < total[q];
      chunk.pieces.push_back(piece);
    }
  }
  return p;
}

std::vector<BarItem> lay_out_bar(const ChunkPicture& chunk, double px_per_row, double min_width_px) {
  std::vector<BarItem> items;
  const auto& pieces = chunk.pieces;
  auto narrow = [&](size_t i) { return pieces[i].rows() * px_per_row < min_width_px; };
  for (size_t i = 0; i < pieces.size();) {
    size_t j = i;
    if (narrow(i)) {
      while (j + 1 < pieces.size() && narrow(j + 1)) ++j;
    }
    BarItem item;
    item.first = i;
    item.last = j;
    item.row_begin = pieces[i].row_begin;
    item.row_end = pieces[j].row_end;
    for (size_t k = i; k <= j; ++k) item.padding_rows += pieces[k].padding_rows;
    items.push_back(item);
    i = j + 1;
  }
  return items;
}

}  // namespace mlaplan::render
