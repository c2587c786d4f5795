// A sweep as an SVG line chart: iterations per batch against buffer size, one line per group of
// settings (the groups recommend() chooses within), with the recommendation drawn in, and with
// predicted times (--cost) a second panel of ms per step under it. The picture scripts/plot_sweep.py
// draws with matplotlib, here without Python, and with a tooltip on every point.
#pragma once

#include <string>

#include "mlaplan/sweeps/sweep_format.hpp"

namespace mlaplan::render {

// The chart of `report` (its sweep's rows; with recommend_options, each group's choice and, for a
// recommendation by iterations, the limit K). x: buffer_token_size on a log2 axis; y: p99 iterations per batch (solid) and the mean
// (dashed), linear from 0, or log when the values span more than 50 and a factor of 8. With predicted
// times, the panel under it: p99 ms per step (solid) and the mean (dashed) on the same x, log when
// they span more than a factor of 8, a p99 refused batches make infinite on a "refused" band at its
// top, and the choices ringed there too when the recommendation is by time. A sweep with no rows
// (or no sweep) still gives a valid picture that says so. `standalone` adds the XML
// declaration a .svg file carries; leave it out to inline the chart in HTML.
std::string sweep_svg(const mlaplan::sweeps::SweepReport& report, bool standalone = true);

}  // namespace mlaplan::render
