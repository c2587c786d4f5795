#include "mlaplan/render/plan_svg.hpp"

#include "mlaplan/io/text_wrap.hpp"
#include "mlaplan/sweeps/recommend.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "mlaplan/io/byte_format.hpp"
#include "mlaplan/render/palette.hpp"
#include "mlaplan/render/svg_writer.hpp"
#include "mlaplan/profile/stop_request.hpp"

namespace mlaplan::render {

namespace {

// Geometry, in px. Every position the drawing uses comes from here, so bar_box agrees with it.
constexpr double kLeft = 52;          // chunk numbers go left of this
constexpr double kRight = 20;
constexpr double kTop = 12;
constexpr double kSummaryHeight = 24;  // a line of the chunk counts of several panels
constexpr double kSummarySize = 16;
constexpr double kLine = 18;           // a header line
constexpr double kAxis = 26;           // row ticks above the bars
constexpr double kBar = 18;
constexpr double kBarGap = 4;
constexpr double kNote = 20;           // "... more chunks not drawn"
constexpr double kLegend = 30;
constexpr double kPanelGap = 26;
constexpr size_t kRefusedLines = 3;   // the reason, wrapped
constexpr double kRefusedBody = 17 * kRefusedLines + 6;
constexpr double kMinPieceWidth = 4;   // narrower pieces are grouped with narrow neighbours
constexpr double kLabelSize = 11;
constexpr size_t kGroupTooltipPieces = 16;
constexpr double kTimeColumn = 66;     // each chunk's time, right of the buffer's end, with a cost file
constexpr double kTimeSize = 11;

constexpr std::string_view kRefusedInk = "#CC3311";  // Tol's vibrant red: a refusal, the max_chunks line


double bar_width(const PlanSvgOptions& o);
double bars_width(const PlanPicture& p, const PlanSvgOptions& o);
std::string memory_text(const io::MemoryFigures& f);

// A chunk's time: "850 us", "12.5 us", "1.25 ms" (sweeps' ms digits from 1 ms up).
std::string chunk_time_text(double ms) {
  const double us = ms * 1e3;
  return ms >= 1 ? sweeps::format_ms(ms) : fmt::format("{:.{}f} us", us, us < 10 ? 2 : us < 100 ? 1 : 0);
}


// The panel's detail lines under its title: the batch, then the fill, tokens, padding and memory,
// broken into as many lines as the width needs (it was cut mid-word at one), at most three.
std::vector<std::string> detail_lines(const PlanPicture& p, const PlanSvgOptions& o) {
  std::vector<std::string> lines{fmt::format("{}: {} sequence{}, page {} tokens, buffer {} rows, max_chunks {}{}",
                                             clip_text(p.scenario, 90), p.batch_size, p.batch_size == 1 ? "" : "s", p.page_size,
                                             p.buffer_token_size, p.max_chunks, p.planner.empty() ? "" : ", planner " + p.planner)};
  lines = wrap_to_width(lines.front(), 12, bar_width(o), 2);
  if (!p.refused.empty()) return lines;
  std::string line = fmt::format("fill {:.1f}% | {} {} streamed in {} rows", 100.0 * p.fill(), p.payload_tokens,
                                 p.policy == "max" ? "tokens (cache + new)" : "cached context tokens", p.streamed_rows);
  if (p.padding_rows()) line += fmt::format(" | page padding {} rows", p.padding_rows());
  if (p.memory) line += " | " + memory_text(*p.memory);
  if (p.step_ms) line += fmt::format(" | {} predicted on {}", step_time_text(p), p.gpu);
  // Where the time goes: the chunks' part, the rest being the new tokens' step and the fixed launches.
  if (p.step_ms && p.timed_chunks())
    line += fmt::format(", {} in the chunks, {} in the new tokens' step and fixed work", chunk_time_text(p.chunks_ms()),
                        chunk_time_text(std::max(0.0, *p.step_ms - p.chunks_ms())));
  for (std::string& l : wrap_to_width(line, 12, bar_width(o), 3)) lines.push_back(std::move(l));
  return lines;
}

double header_height(const PlanPicture& p, const PlanSvgOptions& o) {
  return static_cast<double>(1 + detail_lines(p, o).size()) * kLine;
}

double panel_height(const PlanPicture& p, const PlanSvgOptions& o) {
  double h = header_height(p, o);
  if (!p.refused.empty()) return h + kRefusedBody;
  const size_t n = drawn_chunks(p, o);
  h += kAxis + static_cast<double>(n) * (kBar + kBarGap);
  if (n < p.chunks.size()) h += kNote;
  return h + kLegend;
}

std::string chunks_text(const PlanPicture& p) {
  if (!p.refused.empty()) return "refused";
  std::string t = fmt::format("{} chunk{}", p.chunks_used, p.chunks_used == 1 ? "" : "s");
  if (p.chunks_used > p.max_chunks) t += fmt::format(" (over max_chunks {})", p.max_chunks);
  return t;
}

// The chunk counts of several panels, first thing on the picture, wrapped at " | " to the width.
std::vector<std::string> summary_lines(const std::vector<PlanPicture>& panels, const PlanSvgOptions& o) {
  std::vector<std::string> lines;
  if (panels.size() < 2) return lines;
  std::string line = panels.front().step_ms ? "chunks used, time predicted:" : "chunks used:";
  bool has_part = false;
  for (const PlanPicture& p : panels) {
    const std::string when = step_time_text(p);
    const std::string part = fmt::format("{} {}{}", clip_text(p.policy, 40), chunks_text(p), when.empty() ? "" : ", " + when);
    if (has_part && text_width(line + " | " + part, kSummarySize) > o.width - kLeft - kRight) {
      lines.push_back(line);
      line = part;
      continue;
    }
    line += (has_part ? " | " : " ") + part;
    has_part = true;
  }
  lines.push_back(line);
  return lines;
}

double first_panel_top(const std::vector<PlanPicture>& panels, const PlanSvgOptions& o) {
  const size_t lines = summary_lines(panels, o).size();
  return kTop + static_cast<double>(lines) * kSummaryHeight + (lines ? 14.0 : 0.0);
}

double panel_top(const std::vector<PlanPicture>& panels, size_t index, const PlanSvgOptions& o) {
  double y = first_panel_top(panels, o);
  for (size_t i = 0; i < index; ++i) y += panel_height(panels[i], o) + kPanelGap;
  return y;
}

double bars_top(const PlanPicture& p, double top, const PlanSvgOptions& o) { return top + header_height(p, o) + kAxis; }
double bar_width(const PlanSvgOptions& o) { return std::max(o.width - kLeft - kRight, 100.0); }
// The bars' width: with chunk times, the column they take is left of the picture's right edge.
double bars_width(const PlanPicture& p, const PlanSvgOptions& o) {
  return p.timed_chunks() ? std::max(bar_width(o) - kTimeColumn, 50.0) : bar_width(o);
}

std::string piece_tooltip(const PlanPicture& p, const ChunkPicture& chunk, const Piece& piece) {
  const uint64_t token_end = piece.token_begin + piece.rows();
  std::string t = fmt::format("sequence {}: tokens [{}, {}) in buffer rows [{}, {}) of chunk {}", piece.sequence,
                              piece.token_begin, token_end, piece.row_begin, piece.row_end, chunk.index);
  const uint32_t cache = p.cache_lengths[piece.sequence], fresh = p.new_tokens[piece.sequence];
  if (p.policy == "max")
    t += fmt::format("\nits stream: {} cached + {} new tokens, padded to whole pages of {}", cache, fresh, p.page_size);
  else
    t += fmt::format("\nits stream: {} cached context tokens", cache);
  if (piece.padding_rows) t += fmt::format("\n{} rows of page padding", piece.padding_rows);
  if (piece.continued) t += "\ncontinued from an earlier chunk";
  if (piece.continues) t += fmt::format("\ncontinues in chunk {}", chunk.index + 1);
  return t;
}

std::string group_tooltip(const ChunkPicture& chunk, const BarItem& item) {
  const auto& first = chunk.pieces[item.first];
  const auto& last = chunk.pieces[item.last];
  const size_t count = item.last - item.first + 1;
  std::string t = fmt::format("sequences {} to {}: {} pieces too narrow to draw one by one\nbuffer rows [{}, {}) of chunk {}",
                              first.sequence, last.sequence, count, item.row_begin, item.row_end, chunk.index);
  if (item.padding_rows) t += fmt::format(", {} rows of page padding", item.padding_rows);
  const size_t listed = std::min(count, kGroupTooltipPieces);
  for (size_t k = item.first; k < item.first + listed; ++k) {
    const Piece& q = chunk.pieces[k];
    t += fmt::format("\ns{}: tokens [{}, {}) in rows [{}, {})", q.sequence, q.token_begin, q.token_begin + q.rows(),
                     q.row_begin, q.row_end);
  }
  if (count > listed) t += fmt::format("\n... {} more", count - listed);
  return t;
}

std::string memory_text(const io::MemoryFigures& f) {
  if (f.fused_loop)  // mlaplan's fused loop holds K and V alone: no K concat, no latent to list
    return fmt::format("{} TP {} {}: buffer {} (K + V, mlaplan's fused loop)", f.model, f.tp, f.dtype, io::format_bytes(f.buffer_bytes));
  return fmt::format("{} TP {} {}: buffer {}, K concat {}, latent {}", f.model, f.tp, f.dtype,
                     io::format_bytes(f.buffer_bytes), io::format_bytes(f.k_concat_bytes), io::format_bytes(f.latent_bytes));
}

// "54%", and "0.3%" rather than a misleading "0%".
std::string percent(double part, double whole) {
  const double v = whole > 0 ? 100.0 * part / whole : 0.0;
  return v < 10 ? fmt::format("{:.1f}%", v) : fmt::format("{:.0f}%", v);
}

class Painter {
 public:
  Painter(SvgWriter& svg, const PlanSvgOptions& o) : svg_(svg), o_(o), pad_(o.id_prefix + "-pad"), many_(o.id_prefix + "-many") {}

  void defs() {
    // Padding: dark diagonal hatching over the sequence's colour. Groups: thin stripes of three
    // palette colours, unlike any single sequence.
    svg_.raw("<defs>\n");
    svg_.raw(fmt::format(
        "<pattern id=\"{}\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\" patternTransform=\"rotate(45)\">"
        "<rect width=\"6\" height=\"6\" fill=\"#FFFFFF\" fill-opacity=\"0.45\"/>"
        "<rect width=\"2.5\" height=\"6\" fill=\"#000000\" fill-opacity=\"0.75\"/></pattern>\n",
        xml_escape(pad_)));
    svg_.raw(fmt::format("<pattern id=\"{}\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\">"
                         "<rect width=\"2\" height=\"6\" fill=\"{}\"/><rect x=\"2\" width=\"2\" height=\"6\" fill=\"{}\"/>"
                         "<rect x=\"4\" width=\"2\" height=\"6\" fill=\"{}\"/></pattern>\n",
                         xml_escape(many_), kSequenceSwatches[1].fill, kSequenceSwatches[4].fill,
                         kSequenceSwatches[2].fill));
    svg_.raw("</defs>\n");
  }

  void summary(const std::vector<PlanPicture>& panels) {
    const std::vector<std::string> lines = summary_lines(panels, o_);
    for (size_t i = 0; i < lines.size(); ++i)
      svg_.text(kLeft, kTop + 17 + static_cast<double>(i) * kSummaryHeight, lines[i], kSummarySize,
                {{"font-weight", "bold"}, {"fill", std::string(kInk)}});
  }

  void panel(const PlanPicture& p, double top) {
    header(p, top);
    if (!p.refused.empty()) {
      const auto lines = wrap_to_width("refused: " + p.refused, 13, bar_width(o_), kRefusedLines);
      for (size_t i = 0; i < lines.size(); ++i)
        svg_.text(kLeft, top + header_height(p, o_) + 16 + static_cast<double>(i) * 17, lines[i], 13,
                  {{"fill", std::string(kRefusedInk)}});
      return;
    }
    const double W = bars_width(p, o_), N = p.buffer_token_size;
    const double px_per_row = W / N;
    const double y0 = bars_top(p, top, o_);
    axis(p, y0);
    const size_t n = drawn_chunks(p, o_);
    for (size_t c = 0; c < n; ++c) bar(p, p.chunks[c], y0 + static_cast<double>(c) * (kBar + kBarGap), px_per_row);
    double y = y0 + static_cast<double>(n) * (kBar + kBarGap);
    // Policies other than max may need more chunks than max_chunks: mark where max would stop.
    if (p.chunks.size() > p.max_chunks && p.max_chunks < n) {
      const double ly = y0 + p.max_chunks * (kBar + kBarGap) - kBarGap / 2;
      svg_.line(kLeft - 30, ly, kLeft + W, ly, kRefusedInk, 1.5, {{"stroke-dasharray", "6 3"}});
      const std::string label = fmt::format("max_chunks = {}", p.max_chunks);
      const double tw = text_width(label, 11);
      svg_.rect(kLeft + W - tw - 8, ly - 13, tw + 6, 13, "#FFFFFF", {}, {{"fill-opacity", "0.9"}});
      svg_.text(kLeft + W - 5, ly - 3, label, 11, {{"text-anchor", "end"}, {"fill", std::string(kRefusedInk)}});
    }
    // The buffer's end, over every bar.
    svg_.line(kLeft + W, y0 - 8, kLeft + W, y - kBarGap, kBufferEndStroke, 2);
    if (n < p.chunks.size()) {
      const size_t used = std::min(p.chunks.size(), static_cast<size_t>(p.chunks_used));
      std::string note;
      if (n < used) note = fmt::format("... {} more chunks not drawn (chunks {} to {}{})", used - n, n, used - 1,
                                       p.timed_chunks() ? ", " + chunk_time_text(p.chunks_ms(n)) + " together" : "");
      if (used < p.chunks.size())
        note += fmt::format("{}{} unused of max_chunks {}", note.empty() ? "" : "; ",
                            used + 1 == p.chunks.size() ? fmt::format("chunk {}", used)
                                                        : fmt::format("chunks {} to {}", used, p.chunks.size() - 1),
                            p.max_chunks);
      svg_.text(kLeft, y + 14, clip_to_width(note, 12, bar_width(o_)), 12, {{"fill", std::string(kInk)}});
      y += kNote;
    }
    legend(y + 4);
  }

 private:
  void header(const PlanPicture& p, double top) {
    const std::string when = step_time_text(p);
    svg_.text(kLeft, top + 14,
              clip_to_width(fmt::format("{}: {}{}", p.policy, chunks_text(p), when.empty() ? "" : ", " + when), 15, bar_width(o_)),
              15, {{"font-weight", "bold"}, {"fill", std::string(kInk)}});
    const std::vector<std::string> lines = detail_lines(p, o_);
    for (size_t i = 0; i < lines.size(); ++i)
      svg_.text(kLeft, top + static_cast<double>(i + 1) * kLine + 13, lines[i], 12, {{"fill", std::string(kInk)}});
  }

  void axis(const PlanPicture& p, double y0) {
    const double W = bars_width(p, o_);
    const double ay = y0 - 8;
    svg_.line(kLeft, ay, kLeft + W, ay, kFrameStroke, 1);
    for (int k = 0; k <= 4; ++k) {
      const double x = kLeft + W * k / 4;
      svg_.line(x, ay - 4, x, ay, kFrameStroke, 1);
      const uint64_t row = uint64_t{p.buffer_token_size} * k / 4;
      const std::string anchor = k == 0 ? "start" : k == 4 ? "end" : "middle";
      // Rows in K/M where exact (16K, not 16384), as engines state their buffers.
      svg_.text(x, ay - 7, k == 4 ? fmt::format("buffer end: {} rows", io::format_rows(row)) : io::format_rows(row), 11,
                {{"text-anchor", anchor}, {"fill", std::string(kInk)}});
    }
    svg_.text(kLeft - 8, ay - 7, "chunk", 11, {{"text-anchor", "end"}, {"fill", std::string(kInk)}});
    if (p.timed_chunks())
      svg_.text(kLeft + bar_width(o_), ay - 7, "time/step", kTimeSize, {{"text-anchor", "end"}, {"fill", std::string(kInk)}});
  }

  void bar(const PlanPicture& p, const ChunkPicture& chunk, double y, double px_per_row) {
    const double W = bars_width(p, o_);
    svg_.text(kLeft - 8, y + kBar - 5, fmt::to_string(chunk.index), 11, {{"text-anchor", "end"}, {"fill", std::string(kInk)}});
    if (!chunk.used) {
      svg_.rect(kLeft, y, W, kBar, kUnusedFill, fmt::format("chunk {}: unused", chunk.index));
      svg_.text(kLeft + 6, y + kBar - 5, "unused", 11, {{"fill", "#555555"}});
      return;
    }
    // The buffer's capacity, so the empty part of the chunk shows.
    svg_.rect(kLeft, y, W, kBar, "#FFFFFF",
              fmt::format("chunk {}: {} of {} rows ({:.1f}%){}", chunk.index, chunk.rows, p.buffer_token_size,
                          100.0 * chunk.rows / p.buffer_token_size,
                          chunk.ms ? fmt::format(", predicted {} of the step", chunk_time_text(*chunk.ms)) : ""),
              {{"stroke", std::string(kFrameStroke)}, {"stroke-width", "0.5"}});
    for (const BarItem& item : lay_out_bar(chunk, px_per_row, kMinPieceWidth)) {
      const double x = kLeft + item.row_begin * px_per_row;
      const double w = (item.row_end - item.row_begin) * px_per_row;
      if (item.grouped()) {
        group(chunk, item, x, y, w);
      } else {
        piece(p, chunk, chunk.pieces[item.first], x, y, w, px_per_row);
      }
    }
    if (chunk.ms)
      svg_.text(kLeft + bar_width(o_), y + kBar - 5, chunk_time_text(*chunk.ms), kTimeSize,
                {{"text-anchor", "end"}, {"fill", std::string(kInk)}});
    const double end = kLeft + chunk.rows * px_per_row;
    const std::string rest = fmt::format("{} rows, {}", chunk.rows, percent(chunk.rows, p.buffer_token_size));
    if (kLeft + W - end > text_width(rest, 10) + 10)
      svg_.text(end + 5, y + kBar - 5, rest, 10, {{"fill", "#555555"}});
  }

  void piece(const PlanPicture& p, const ChunkPicture& chunk, const Piece& q, double x, double y, double w, double px_per_row) {
    const Swatch sw = sequence_swatch(q.sequence);
    const std::string tip = piece_tooltip(p, chunk, q);
    // Pieces wide enough get a white edge so neighbours of similar colour stay apart.
    if (w >= 3) {
      svg_.rect(x, y, w, kBar, sw.fill, tip, {{"stroke", "#FFFFFF"}, {"stroke-width", "0.75"}});
    } else {
      svg_.rect(x, y, w, kBar, sw.fill, tip);
    }
    if (q.padding_rows) {
      const double pw = q.padding_rows * px_per_row;
      svg_.rect(x + w - pw, y, pw, kBar, "url(#" + pad_ + ")", fmt::format("{} rows of page padding (sequence {})", q.padding_rows, q.sequence));
    }
    if (q.continues && w >= 10) {  // a notch at the cut: the sequence goes on in the next chunk
      svg_.raw(fmt::format("<path d=\"M{} {} l-6 0 l6 6 z\" fill=\"{}\"/>\n", svg_number(x + w), svg_number(y), sw.ink));
    }
    const uint64_t token_end = q.token_begin + q.rows();
    const double room = w - 6 - (q.padding_rows ? q.padding_rows * px_per_row : 0.0);
    for (const std::string& label : {fmt::format("s{} [{}, {})", q.sequence, q.token_begin, token_end), fmt::format("s{}", q.sequence)}) {
      if (text_width(label, kLabelSize) <= room) {
        svg_.text(x + 3, y + kBar - 5, label, kLabelSize, {{"fill", std::string(sw.ink)}, {"pointer-events", "none"}});
        break;
      }
    }
  }

  void group(const ChunkPicture& chunk, const BarItem& item, double x, double y, double w) {
    svg_.rect(x, y, w, kBar, "url(#" + many_ + ")", group_tooltip(chunk, item));
    const std::string label = fmt::format("{} seqs", item.last - item.first + 1);
    if (text_width(label, kLabelSize) + 8 <= w) {
      // A white backing keeps the label legible over the stripes.
      const double tw = text_width(label, kLabelSize);
      svg_.rect(x + 2, y + 3, tw + 4, kBar - 6, "#FFFFFF", {}, {{"fill-opacity", "0.85"}, {"pointer-events", "none"}});
      svg_.text(x + 4, y + kBar - 5, label, kLabelSize, {{"fill", "#000000"}, {"pointer-events", "none"}});
    }
  }

  void legend(double y) {
    double x = kLeft;
    auto key = [&](std::string_view fill, const std::string& text, bool stroke = false) {
      if (stroke) {
        svg_.rect(x, y + 4, 16, 12, std::string(fill), {}, {{"stroke", std::string(kFrameStroke)}, {"stroke-width", "0.5"}});
      } else {
        svg_.rect(x, y + 4, 16, 12, std::string(fill));
      }
      svg_.text(x + 20, y + 14, text, 11, {{"fill", std::string(kInk)}});
      x += 20 + text_width(text, 11) + 18;
    };
    svg_.rect(x, y + 4, 16, 12, kSequenceSwatches[0].fill);
    key("url(#" + pad_ + ")", "page padding");
    key("url(#" + many_ + ")", "sequences too narrow to draw one by one");
    key("#FFFFFF", "free buffer rows", true);
    svg_.text(x, y + 14, "hover for details", 11, {{"fill", "#777777"}, {"font-style", "italic"}});
  }

  SvgWriter& svg_;
  const PlanSvgOptions& o_;
  std::string pad_, many_;
};

}  // namespace

size_t drawn_chunks(const PlanPicture& p, const PlanSvgOptions& o) {
  return std::min({p.chunks.size(), static_cast<size_t>(p.chunks_used), o.max_chunk_rows});
}

BarBox bar_box(const std::vector<PlanPicture>& panels, size_t panel, size_t chunk, const PlanSvgOptions& o) {
  const double y0 = bars_top(panels[panel], panel_top(panels, panel, o), o);
  return BarBox{kLeft, y0 + static_cast<double>(chunk) * (kBar + kBarGap), bars_width(panels[panel], o), kBar};
}

std::string plan_svg(const std::vector<PlanPicture>& panels, const PlanSvgOptions& o) {
  // Each panel's top as a running sum: asking panel_top for each would be quadratic in the panels.
  const double first_top = first_panel_top(panels, o);
  double height = first_top;
  for (const PlanPicture& p : panels) height += panel_height(p, o) + kPanelGap;
  SvgWriter svg(o.width, height);
  svg.rect(0, 0, o.width, height, "#FFFFFF");
  Painter painter(svg, o);
  painter.defs();
  if (panels.size() > 1) painter.summary(panels);
  double top = first_top;
  for (size_t i = 0; i < panels.size(); ++i) {
    if ((i & 255) == 0 && profile::stop_requested()) throw Interrupted("interrupted while drawing the plans");
    svg.open("g", {{"class", "panel"}});
    painter.panel(panels[i], top);
    svg.close();
    top += panel_height(panels[i], o) + kPanelGap;
  }
  if (panels.empty()) svg.text(kLeft, kTop + 18, "no plan to draw", 14);
  return svg.finish(o.standalone);
}

}  // namespace mlaplan::render
