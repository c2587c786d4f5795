#include "mlaplan/render/html_page.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "mlaplan/build_info.hpp"
#include "mlaplan/render/svg_writer.hpp"

namespace mlaplan::render {

namespace {

// Kept small and inline: the page must not fetch anything.
constexpr std::string_view kStyle = R"(
body { font-family: "DejaVu Sans", Verdana, sans-serif; color: #222; margin: 24px; max-width: 1200px; }
h1 { font-size: 22px; margin: 0 0 8px 0; }
h2 { font-size: 18px; margin: 28px 0 8px 0; border-bottom: 1px solid #ccc; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 20px 0 6px 0; }
p { margin: 6px 0; line-height: 1.4; }
pre { background: #f6f6f6; border: 1px solid #ddd; padding: 8px; overflow-x: auto; font-size: 12px; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; }
th { background: #eee; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 8px 0; overflow-x: auto; }
figcaption { font-size: 12px; color: #555; }
details { margin: 8px 0; overflow-x: auto; }
summary { cursor: pointer; }
p.cmd { font-size: 12px; color: #555; }
footer { margin-top: 32px; font-size: 11px; color: #777; }
)";

}  // namespace

HtmlPage::HtmlPage(std::string_view title) : title_(clip_text(title, 200)) { heading(title_, 1); }

void HtmlPage::heading(std::string_view text, int level) {
  level = std::clamp(level, 1, 4);
  body_ += fmt::format("<h{0}>{1}</h{0}>\n", level, xml_escape(clip_text(text, 200)));
}

void HtmlPage::paragraph(std::string_view text) { body_ += "<p>" + xml_escape(clip_text(text, 4000)) + "</p>\n"; }

void HtmlPage::command(std::string_view text) {
  body_ += "<p class=\"cmd\">made by <code>" + xml_escape(text) + "</code></p>\n";
}

void HtmlPage::preformatted(std::string_view text) { body_ += "<pre>" + xml_escape(text) + "</pre>\n"; }

void HtmlPage::figure(std::string_view svg_markup, std::string_view caption) {
  body_ += "<figure>\n";
  body_ += svg_markup;
  if (!caption.empty()) body_ += "<figcaption>" + xml_escape(caption) + "</figcaption>\n";
  body_ += "</figure>\n";
}

void HtmlPage::table(const std::vector<std::string>& titles, const std::vector<std::vector<std::string>>& rows,
                     const std::vector<bool>& numeric) {
  auto is_numeric = [&](size_t i) { return i < numeric.size() && numeric[i]; };
  body_ += "<table>\n<tr>";
  for (size_t i = 0; i < titles.size(); ++i) body_ += "<th>" + xml_escape(titles[i]) + "</th>";
  body_ += "</tr>\n";
  for (const auto& row : rows) {
    body_ += "<tr>";
    for (size_t i = 0; i < row.size(); ++i)
      body_ += (is_numeric(i) ? "<td class=\"num\">" : "<td>") + xml_escape(row[i]) + "</td>";
    body_ += "</tr>\n";
  }
  body_ += "</table>\n";
}

void HtmlPage::begin_details(std::string_view summary) {
  body_ += "<details>\n<summary>" + xml_escape(summary) + "</summary>\n";
}

void HtmlPage::end_details() { body_ += "</details>\n"; }

std::string HtmlPage::finish() const {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{}</style>\n"
      "</head>\n<body>\n{}<footer>made by mlaplan {}</footer>\n</body>\n</html>\n",
      xml_escape(clip_text(title_, 200)), kStyle, body_, xml_escape(build_info().version));
}

}  // namespace mlaplan::render
