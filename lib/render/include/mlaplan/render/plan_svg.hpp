// Pictures of plans: one panel per plan, one horizontal bar per chunk drawn to scale against the
// buffer's rows, each sequence a coloured segment (labelled when the label fits, with a tooltip
// always), page padding hatched, unused chunks grey, the buffer's end marked.
#pragma once

#include <string>
#include <vector>

#include "mlaplan/render/plan_picture.hpp"

namespace mlaplan::render {

struct PlanSvgOptions {
  double width = 960;          // px, the whole picture
  size_t max_chunk_rows = 128;  // bars drawn per panel; the rest are summed up in a line
  bool standalone = true;       // a .svg file (XML declaration) rather than inline in HTML
  std::string id_prefix = "mlaplan";  // pattern ids, unique per picture on an HTML page
};

// Geometry the pixel tests rely on (and nothing else should): where panel `p`'s bar for chunk `c`
// lies, in the picture's px. Panels are stacked top to bottom in the order given.
struct BarBox {
  double x = 0, y = 0, width = 0, height = 0;  // the whole buffer's extent for that chunk
};
BarBox bar_box(const std::vector<PlanPicture>& panels, size_t panel, size_t chunk, const PlanSvgOptions& options = {});
// The bars panel `p` draws: the chunks its plan used, at most options.max_chunk_rows (a max plan's
// unused chunks are one line under them, "chunks 2 to 15 unused of max_chunks 16").
size_t drawn_chunks(const PlanPicture& p, const PlanSvgOptions& options = {});

std::string plan_svg(const std::vector<PlanPicture>& panels, const PlanSvgOptions& options = {});

}  // namespace mlaplan::render
