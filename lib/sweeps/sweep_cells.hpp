// A table's cells as the HTML page takes them (titles, which columns hold numbers, the rows): one
// conversion for the default table and for every column's.
#pragma once

#include "mlaplan/io/table_builder.hpp"
#include "mlaplan/sweeps/sweep_format.hpp"

namespace mlaplan::sweeps {

inline SweepCells cells_of(const io::TableBuilder& t) {
  SweepCells out;
  for (const io::TableColumn& c : t.columns()) {
    out.titles.push_back(c.title);
    out.numeric.push_back(c.align == io::Align::right);
  }
  out.rows = t.rows();
  return out;
}

}  // namespace mlaplan::sweeps
