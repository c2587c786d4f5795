#include "mlaplan/render/sweep_html.hpp"

#include "mlaplan/render/html_page.hpp"
#include "mlaplan/io/text_wrap.hpp"
#include "mlaplan/render/sweep_svg.hpp"

namespace mlaplan::render {

// The answer first, as on the terminal: the recommendation, the picture, the settings within the
// window (the 28-column table of every figure ran off a 1400-px one), every column one click away.
std::string sweep_html(const sweeps::SweepReport& report, const std::string& command) {
  HtmlPage page("mlaplan sweep: " + report.sweep->source);
  if (!command.empty()) page.command(command);
  const std::string recommendation = sweeps::sweep_recommendation(report, false);
  if (!recommendation.empty()) {
    page.heading("Recommendation");
    page.preformatted(io::wrap_lines(recommendation.substr(recommendation.find_first_not_of('\n'))));
  }
  page.preformatted(sweeps::sweep_brief_summary(*report.sweep));
  page.figure(sweep_svg(report, false), "Hover a point for its setting's figures.");
  page.heading("The settings");
  const sweeps::SweepCells brief = sweeps::sweep_brief_cells(report);
  page.table(brief.titles, brief.rows, brief.numeric);
  page.preformatted(sweeps::sweep_brief_legend(report));
  page.begin_details("Every column, and each buffer the recommendation passed over");
  page.preformatted(sweeps::sweep_summary(*report.sweep));
  const sweeps::SweepCells cells = sweeps::sweep_cells(report);
  page.table(cells.titles, cells.rows, cells.numeric);
  if (!recommendation.empty()) page.preformatted(sweeps::sweep_recommendation(report));
  page.end_details();
  return page.finish();
}

}  // namespace mlaplan::render
