// A table of text cells printed two ways: columns aligned with spaces (for the terminal) and
// Markdown. bench and sweep print their tables through it, so both lay out cells alike.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mlaplan::io {

// Words to the left, numbers to the right.
enum class Align { left, right };

struct TableColumn {
  std::string title;
  Align align = Align::left;
};

class TableBuilder {
 public:
  explicit TableBuilder(std::vector<TableColumn> columns) : columns_(std::move(columns)) {}

  // One cell per column; a short row is filled with empty cells, a long one throws
  // std::invalid_argument (a programming error, not an input one).
  void add_row(std::vector<std::string> cells);

  const std::vector<TableColumn>& columns() const { return columns_; }
  const std::vector<std::vector<std::string>>& rows() const { return rows_; }

  // The titles, then each row: every column as wide as its widest cell or title (in bytes), cells
  // padded by their column's alignment, `gap` between columns, no trailing spaces; a line each.
  std::string aligned(std::string_view gap = "  ") const;

  // A GitHub Markdown table: the titles, the alignment row (--- or ---:), then the rows. Cells go
  // in as they are; callers escape what the user wrote.
  std::string markdown() const;

 private:
  std::vector<TableColumn> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace mlaplan::io
