#include "mlaplan/render/sweep_html.hpp"

#include "mlaplan/render/html_page.hpp"
#include "mlaplan/render/sweep_svg.hpp"

namespace mlaplan::render {

std::string sweep_html(const sweeps::SweepReport& report, const std::string& command) {
  HtmlPage page("mlaplan sweep: " + report.sweep->source);
  if (!command.empty()) page.command(command);
  page.preformatted(sweeps::sweep_summary(*report.sweep));
  page.figure(sweep_svg(report, false), "Hover a point for its setting's figures.");
  const std::string recommendation = sweeps::sweep_recommendation(report);
  if (!recommendation.empty()) {
    page.heading("Recommendation");
    page.preformatted(recommendation);
  }
  page.heading("Every setting");
  const sweeps::SweepCells cells = sweeps::sweep_cells(report);
  page.table(cells.titles, cells.rows, cells.numeric);
  return page.finish();
}

}  // namespace mlaplan::render
