#include "mlaplan/render/plan_html.hpp"

#include <fmt/format.h>

#include "mlaplan/render/html_page.hpp"
#include "mlaplan/render/plan_svg.hpp"
#include "mlaplan/render/svg_writer.hpp"
#include "mlaplan/profile/stop_request.hpp"

namespace mlaplan::render {

namespace {

constexpr size_t kNameChars = 200;

std::vector<PlanPicture> pictures(const std::vector<const io::PlanReport*>& reports) {
  std::vector<PlanPicture> out;
  out.reserve(reports.size());
  for (const io::PlanReport* r : reports) out.push_back(measure_plan(*r));
  return out;
}

// With a cost file (`timed`), the predicted step after the chunks: the answer beside the count.
std::vector<std::string> summary_row(const PlanPicture& p, const io::PlanReport& r, bool timed) {
  std::vector<std::string> row;
  if (!p.refused.empty()) {
    row = {p.policy, "refused", "", "", "", p.refused};
  } else {
    row = {p.policy,
           fmt::to_string(p.chunks_used),
           fmt::format("{:.1f}%", 100.0 * p.fill()),
           fmt::to_string(p.streamed_rows),
           fmt::to_string(p.padding_rows()),
           r.verification.status.empty() ? "not checked" : r.verification.status};
  }
  if (timed) row.insert(row.begin() + 2, step_time_text(p));
  return row;
}

}  // namespace

std::string plans_svg(const std::vector<io::PlanReport>& reports) {
  std::vector<const io::PlanReport*> all;
  for (const io::PlanReport& r : reports) all.push_back(&r);
  return plan_svg(pictures(all));
}

std::string plan_html(const std::vector<io::PlanReport>& reports, const std::string& command, size_t max_sequences) {
  // Reports of one scenario are consecutive: one section, one picture each.
  std::vector<std::vector<const io::PlanReport*>> sections;
  for (const io::PlanReport& r : reports) {
    if (sections.empty() || sections.back().front()->scenario != r.scenario) sections.emplace_back();
    sections.back().push_back(&r);
  }
  std::string title = "mlaplan plan";
  if (!reports.empty()) {
    const check::Scenario& s = *reports.front().scenario;
    title += ": " + (s.file.empty() ? s.name : s.file);
  }
  HtmlPage page(title);
  if (!command.empty()) page.command(command);
  for (size_t i = 0; i < sections.size(); ++i) {
    if ((i & 255) == 0 && profile::stop_requested()) throw Interrupted("interrupted while writing the page");
    const std::vector<const io::PlanReport*>& section = sections[i];
    const check::Scenario& s = *section.front()->scenario;
    page.heading(s.name);
    if (!s.description.empty()) page.paragraph(s.description);
    const std::vector<PlanPicture> panels = pictures(section);
    bool timed = false;
    for (const PlanPicture& p : panels) timed = timed || p.step_ms.has_value();
    std::vector<std::vector<std::string>> rows;
    for (size_t k = 0; k < section.size(); ++k) rows.push_back(summary_row(panels[k], *section[k], timed));
    std::vector<std::string> header{"policy", "chunks", "fill", "rows streamed", "page padding", "verification"};
    std::vector<bool> numeric{false, true, true, true, true, false};
    if (timed) {
      header.insert(header.begin() + 2, "predicted step");
      numeric.insert(numeric.begin() + 2, true);
    }
    page.table(header, rows, numeric);
    PlanSvgOptions options;
    options.standalone = false;
    options.id_prefix = fmt::format("plan{}", i);  // pattern ids stay unique on the page
    page.figure(plan_svg(panels, options), "Hover a segment for its sequence, tokens and rows.");
    page.begin_details("chunk tables (text)");
    // The text tables quote the name: clipped like the rest of the page.
    check::Scenario clipped;
    const bool long_name = s.name.size() > kNameChars || s.description.size() > kNameChars;
    if (long_name) {
      clipped.name = clip_text(s.name, kNameChars);
      clipped.description = clip_text(s.description, kNameChars);
      clipped.file = s.file;
      clipped.batch = s.batch;
    }
    for (const io::PlanReport* r : section) {
      io::PlanReport shown;
      if (long_name && r->refused.empty()) {
        shown = *r;
        shown.scenario = &clipped;
      }
      if (r->refused.empty()) page.preformatted(io::format_plan_table(long_name ? shown : *r, max_sequences));
      else page.preformatted(fmt::format("policy {}: refused: {}", r->policy, r->refused));
    }
    page.end_details();
  }
  return page.finish();
}

}  // namespace mlaplan::render
