// Prose within 120 columns (io::wrap_lines, io::shorten_path) and rows in binary units (io::format_rows).
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "mlaplan/io/text_wrap.hpp"

using mlaplan::io::format_rows;
using mlaplan::io::shorten_path;
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

TEST(TextWrap, LongPathsLoseTheirMiddleFolders) {
  EXPECT_EQ(shorten_path("costs/h100/x.json", 100), "costs/h100/x.json");
  const std::string deep = "/tmp/" + std::string(70, 'a') + "/" + std::string(60, 'b') + "/cost.json";
  EXPECT_EQ(shorten_path(deep, 100), "/tmp/.../" + std::string(60, 'b') + "/cost.json");
  EXPECT_EQ(shorten_path(deep, 40), "/tmp/.../cost.json");
  EXPECT_EQ(shorten_path("rel/" + std::string(50, 'c') + "/d/e.json", 30), "rel/.../d/e.json");
  // A name too long alone: its start and end, never more than the width, never a split UTF-8 character.
  const std::string name = "/" + std::string(30, 'x') + "\xC3\xA9" + std::string(30, 'y') + ".json";
  const std::string cut = shorten_path(name, 40);
  EXPECT_LE(cut.size(), 40u);
  EXPECT_EQ(cut.substr(cut.size() - 5), ".json");
  EXPECT_NE(cut.find("..."), std::string::npos);
  for (size_t width : {5, 20, 35, 36, 37, 38}) {
    const std::string c = shorten_path(name, width);
    EXPECT_LE(c.size(), std::max<size_t>(width, 3)) << width;
    for (size_t i = 0; i < c.size(); ++i) {  // the two bytes of the e-acute together or not at all
      if (c[i] == '\xC3') EXPECT_TRUE(i + 1 < c.size() && c[i + 1] == '\xA9') << width;
      if (c[i] == '\xA9') EXPECT_TRUE(i > 0 && c[i - 1] == '\xC3') << width;
    }
  }
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
