// Prose within 120 columns (io::wrap_lines) and rows in binary units (io::format_rows).
#include <gtest/gtest.h>

#include <sstream>

#include "mlaplan/io/text_wrap.hpp"

using mlaplan::io::format_rows;
using mlaplan::io::wrap_lines;

namespace {
size_t longest_line(const std::string& text) {
  std::istringstream in(text);
  size_t most = 0;
  for (std::string line; std::getline(in, line);) most = std::max(most, line.size());
  return most;
}
}  // namespace

TEST(TextWrap, BreaksLongLinesAtSpacesUnderTheirIndent) {
  const std::string line = "      " + std::string(50, 'a') + " " + std::string(50, 'b') + " " + std::string(30, 'c');
  const std::string out = wrap_lines(line + "\nshort\n", 120, 4);
  EXPECT_EQ(out, "      " + std::string(50, 'a') + " " + std::string(50, 'b') + "\n          " + std::string(30, 'c') +
                     "\nshort\n");
  EXPECT_LE(longest_line(out), 120u);
}

TEST(TextWrap, ContinuationsGoUnderTheLabelsColumn) {
  const std::string value(60, 'v');
  EXPECT_EQ(wrap_lines("time      " + value + " " + value + "\n          by " + value + " " + value + "\n", 120, 0, 10),
            "time      " + value + "\n          " + value + "\n          by " + value + "\n          " + value + "\n");
}

TEST(TextWrap, KeepsShortLinesAndLongWordsWhole) {
  EXPECT_EQ(wrap_lines("a b c\n\nd\n", 10), "a b c\n\nd\n");
  const std::string path = "/" + std::string(150, 'p');
  EXPECT_EQ(wrap_lines("priced by " + path, 120), "priced by\n    " + path);  // the path is never cut
  EXPECT_EQ(wrap_lines(path, 120), path);
}

TEST(TextWrap, EveryLineFitsWhereWordsAllowIt) {
  std::string prose;
  for (int i = 0; i < 200; ++i) prose += "word" + std::to_string(i) + (i % 37 == 36 ? "\n  " : " ");
  const std::string out = wrap_lines(prose, 120, 4);
  EXPECT_LE(longest_line(out), 120u);
  std::string joined;  // nothing lost or reordered: the same words in order
  std::istringstream a(prose), b(out);
  std::string wa, wb;
  while (a >> wa) {
    ASSERT_TRUE(static_cast<bool>(b >> wb));
    EXPECT_EQ(wa, wb);
  }
  EXPECT_FALSE(static_cast<bool>(b >> wb));
}

TEST(TextWrap, RowsInBinaryUnitsWhereExact) {
  EXPECT_EQ(format_rows(65536), "64K");
  EXPECT_EQ(format_rows(1u << 20), "1M");
  EXPECT_EQ(format_rows(3u << 20), "3M");
  EXPECT_EQ(format_rows(1536), "1536");
  EXPECT_EQ(format_rows(1000), "1000");
  EXPECT_EQ(format_rows(512), "512");
  EXPECT_EQ(format_rows(1024 + 512 * 1024), "513K");
}
