// A self-contained HTML page: styles inline, pictures as inline SVG, nothing fetched from the
// network or read from other files, so the one file opens from disk in any browser and can be
// mailed or attached to a bug. Every piece of text is escaped here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mlaplan::render {

class HtmlPage {
 public:
  explicit HtmlPage(std::string_view title);

  void heading(std::string_view text, int level = 2);
  void paragraph(std::string_view text);
  // The command that made the page, small and monospaced.
  void command(std::string_view text);
  // Monospaced text as it is (the tool's table output).
  void preformatted(std::string_view text);
  // An SVG document written by SvgWriter (finish(false)); it is trusted markup, not text.
  void figure(std::string_view svg_markup, std::string_view caption = {});
  // A table; `numeric` marks right-aligned columns (it may be shorter than `titles`).
  void table(const std::vector<std::string>& titles, const std::vector<std::vector<std::string>>& rows,
             const std::vector<bool>& numeric = {});
  // A collapsible section: everything added until end_details() is hidden behind `summary`.
  void begin_details(std::string_view summary);
  void end_details();

  std::string finish() const;

 private:
  std::string title_;
  std::string body_;
};

}  // namespace mlaplan::render
