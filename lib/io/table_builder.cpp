#include "mlaplan/io/table_builder.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

namespace mlaplan::io {

void TableBuilder::add_row(std::vector<std::string> cells) {
  if (cells.size() > columns_.size())
    throw std::invalid_argument(fmt::format("table row of {} cells for {} columns", cells.size(), columns_.size()));
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

std::string TableBuilder::aligned(std::string_view gap) const {
  std::vector<size_t> width(columns_.size());
  for (size_t i = 0; i < columns_.size(); ++i) {
    width[i] = columns_[i].title.size();
    for (const auto& row : rows_) width[i] = std::max(width[i], row[i].size());
  }
  fmt::memory_buffer out;
  auto line = [&](auto&& cell) {
    const size_t start = out.size();
    for (size_t i = 0; i < columns_.size(); ++i)
      fmt::format_to(std::back_inserter(out), columns_[i].align == Align::right ? "{}{:>{}}" : "{}{:<{}}", i ? gap : "",
                     cell(i), width[i]);
    size_t end = out.size();
    while (end > start && out[end - 1] == ' ') --end;  // no trailing spaces (the last column's padding)
    out.resize(end);
    out.push_back('\n');
  };
  line([&](size_t i) -> const std::string& { return columns_[i].title; });
  for (const auto& row : rows_) line([&](size_t i) -> const std::string& { return row[i]; });
  return fmt::to_string(out);
}

std::string TableBuilder::markdown() const {
  std::vector<std::string_view> titles, rule;
  for (const TableColumn& c : columns_) {
    titles.push_back(c.title);
    rule.push_back(c.align == Align::right ? "---:" : "---");
  }
  std::string out = fmt::format("| {} |\n| {} |\n", fmt::join(titles, " | "), fmt::join(rule, " | "));
  // A '|' in a cell (a path, a name) would end it early: Markdown's escape keeps it one cell.
  auto cell = [](const std::string& text) {
    std::string escaped;
    for (char c : text) escaped += c == '|' ? std::string("\\|") : std::string(1, c);
    return escaped;
  };
  for (const auto& row : rows_) {
    std::vector<std::string> cells;
    for (const std::string& c : row) cells.push_back(cell(c));
    out += fmt::format("| {} |\n", fmt::join(cells, " | "));
  }
  return out;
}

}  // namespace mlaplan::io
