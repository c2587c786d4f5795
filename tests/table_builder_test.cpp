// io's table builder, which bench and sweep print their tables with: widths from the widest cell or
// title, alignment per column, no trailing spaces, and the Markdown form.
#include "mlaplan/io/table_builder.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

using mlaplan::io::Align;
using mlaplan::io::TableBuilder;

namespace {
TableBuilder sample() {
  TableBuilder t({{"name", Align::left}, {"n", Align::right}, {"note", Align::left}});
  t.add_row({"a", "12345", "x"});
  t.add_row({"longer name", "7", ""});  // an empty last cell: the line ends after the number
  t.add_row({"b"});                     // a short row is filled with empty cells
  return t;
}
}  // namespace

TEST(TableBuilder, AlignedColumnsWithoutTrailingSpaces) {
  EXPECT_EQ(sample().aligned(),
            "name             n  note\n"
            "a            12345  x\n"
            "longer name      7\n"
            "b\n");
  EXPECT_EQ(sample().aligned(" | "),
            "name        |     n | note\n"
            "a           | 12345 | x\n"
            "longer name |     7 |\n"
            "b           |       |\n");
}

TEST(TableBuilder, Markdown) {
  EXPECT_EQ(sample().markdown(),
            "| name | n | note |\n"
            "| --- | ---: | --- |\n"
            "| a | 12345 | x |\n"
            "| longer name | 7 |  |\n"
            "| b |  |  |\n");
}

TEST(TableBuilder, ATitleOnlyTableAndATooLongRow) {
  TableBuilder t({{"policy", Align::left}, {"buffer", Align::right}});
  EXPECT_EQ(t.aligned(), "policy  buffer\n");
  EXPECT_EQ(t.markdown(), "| policy | buffer |\n| --- | ---: |\n");
  EXPECT_THROW(t.add_row({"a", "b", "c"}), std::invalid_argument);
  EXPECT_TRUE(t.rows().empty());
}

TEST(TableBuilder, MarkdownEscapesAPipeInACell) {
  // A policy naming a guided cost file "a|b.json" stays one cell, not two.
  TableBuilder t({{"policy", Align::left}, {"buffer", Align::right}});
  t.add_row({"guided:a|b.json", "8192"});
  EXPECT_EQ(t.markdown(), "| policy | buffer |\n| --- | ---: |\n| guided:a\\|b.json | 8192 |\n");
}
