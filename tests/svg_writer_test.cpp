// svg_writer (lib/render): the escaping, clipping and number formatting every picture relies on, the
// writer's markup, and the palette.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "mlaplan/render/palette.hpp"
#include "mlaplan/render/svg_writer.hpp"
#include "svg_checks.hpp"

namespace mlaplan::render {
namespace {

using mlaplan::test::clean_utf8;
using mlaplan::test::count;
using mlaplan::test::dejavu_width;
using mlaplan::test::parser_accepts;

// ---------------------------------------------------------------------------------------------
// svg_writer

TEST(SvgWriter, XmlEscapeEscapesEachSpecialCharacter) {
  EXPECT_EQ(xml_escape("&"), "&amp;");
  EXPECT_EQ(xml_escape("<"), "&lt;");
  EXPECT_EQ(xml_escape(">"), "&gt;");
  EXPECT_EQ(xml_escape("\""), "&quot;");
  EXPECT_EQ(xml_escape("'"), "&#39;");
  EXPECT_EQ(xml_escape("a<b>&\"c'd"), "a&lt;b&gt;&amp;&quot;c&#39;d");
  EXPECT_EQ(xml_escape("&amp;"), "&amp;amp;");  // escaped again: text is text
  EXPECT_EQ(xml_escape(""), "");
  EXPECT_EQ(xml_escape("plain text 123"), "plain text 123");
}

TEST(SvgWriter, XmlEscapeReplacesControlBytesButKeepsWhitespace) {
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(xml_escape("\t\n\r"), "\t\n\r");
  EXPECT_EQ(xml_escape(std::string("a\0b", 3)), "a" + fffd + "b");
  for (int c = 1; c < 0x20; ++c) {
    if (c == '\t' || c == '\n' || c == '\r') continue;
    EXPECT_EQ(xml_escape(std::string(1, static_cast<char>(c))), fffd) << c;
  }
  EXPECT_EQ(xml_escape("\x7f"), "\x7f");  // DEL is an XML 1.0 character
}

TEST(SvgWriter, XmlEscapeReplacesInvalidUtf8) {
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(xml_escape("\x80"), fffd);                      // a stray continuation byte
  EXPECT_EQ(xml_escape("\xff"), fffd);                      // never in UTF-8
  EXPECT_EQ(xml_escape("\xf8\x88\x80\x80\x80"), fffd + fffd + fffd + fffd + fffd);  // 5-byte form
  EXPECT_EQ(xml_escape("a\xc3"), "a" + fffd);               // truncated at the end
  EXPECT_EQ(xml_escape("\xc3<"), fffd + "&lt;");            // truncated before markup
  EXPECT_EQ(xml_escape("\xe2\x82x"), fffd + fffd + "x");    // truncated 3-byte sequence
  // Overlong encodings ('/' as 2, 3 and 4 bytes; NUL as 2) are rejected byte by byte.
  EXPECT_EQ(xml_escape("\xc0\xaf"), fffd + fffd);
  EXPECT_EQ(xml_escape("\xc1\xbf"), fffd + fffd);
  EXPECT_EQ(xml_escape("\xc0\x80"), fffd + fffd);
  EXPECT_EQ(xml_escape("\xe0\x80\xaf"), fffd + fffd + fffd);
  EXPECT_EQ(xml_escape("\xf0\x80\x80\xaf"), fffd + fffd + fffd + fffd);
  // Surrogates (U+D800, U+DFFF), past U+10FFFF, and the non-characters U+FFFE / U+FFFF.
  EXPECT_EQ(xml_escape("\xed\xa0\x80"), fffd + fffd + fffd);
  EXPECT_EQ(xml_escape("\xed\xbf\xbf"), fffd + fffd + fffd);
  EXPECT_EQ(xml_escape("\xf4\x90\x80\x80"), fffd + fffd + fffd + fffd);
  EXPECT_EQ(xml_escape("\xef\xbf\xbe"), fffd + fffd + fffd);
  EXPECT_EQ(xml_escape("\xef\xbf\xbf"), fffd + fffd + fffd);
  // Whatever comes in, what comes out is clean.
  std::mt19937 rng(3);
  for (int i = 0; i < 2000; ++i) {
    std::string junk(std::uniform_int_distribution<int>(0, 12)(rng), '\0');
    for (char& c : junk) c = static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng));
    const std::string out = xml_escape(junk);
    ASSERT_TRUE(clean_utf8(out, "\t\n\r")) << i;
    ASSERT_EQ(out.find('<'), std::string::npos);
  }
}

TEST(SvgWriter, XmlEscapeKeepsValidMultibyteCharacters) {
  for (const std::string ok : {"caf\xc3\xa9", "\xc2\x80", "\xdf\xbf", "\xe0\xa0\x80", "\xe2\x82\xac", "\xed\x9f\xbf",
                               "\xee\x80\x80", "\xef\xbf\xbd", "\xf0\x90\x80\x80", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf",
                               "\xe2\x80\xa6 \xe6\x97\xa5\xe6\x9c\xac"}) {
    EXPECT_EQ(xml_escape(ok), ok);
  }
}

TEST(SvgWriter, ClipTextCutsWholeCharactersAndAddsAnEllipsis) {
  const std::string ellipsis = "\xE2\x80\xA6";
  EXPECT_EQ(clip_text("hello", 5), "hello");
  EXPECT_EQ(clip_text("hello", 10), "hello");
  EXPECT_EQ(clip_text("hello!", 5), "hell" + ellipsis);  // 5 characters, the last the ellipsis
  EXPECT_EQ(clip_text("hello", 1), ellipsis);
  EXPECT_EQ(clip_text("hello", 0), "");
  EXPECT_EQ(clip_text("", 0), "");
  EXPECT_EQ(clip_text("", 3), "");
  // Multibyte characters are never cut: "é" is 2 bytes, "€" 3, "😀" 4.
  const std::string text = "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80xyz";  // é€😀xyz: 6 characters
  EXPECT_EQ(clip_text(text, 6), text);
  EXPECT_EQ(clip_text(text, 5), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80x" + ellipsis);
  EXPECT_EQ(clip_text(text, 4), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80" + ellipsis);
  EXPECT_EQ(clip_text(text, 3), "\xc3\xa9\xe2\x82\xac" + ellipsis);
  EXPECT_EQ(clip_text(text, 2), "\xc3\xa9" + ellipsis);
  for (size_t n = 0; n <= 7; ++n) {
    const std::string clipped = clip_text(text, n);
    EXPECT_TRUE(clean_utf8(clipped)) << n;
    EXPECT_LE(text_width(clipped, 10), text_width(std::string(n, 'x'), 10) + 1e-9) << n;  // at most n characters
  }
  // Clipping to a width: nothing cut when it fits; otherwise within the width, ending in the ellipsis.
  EXPECT_EQ(clip_to_width("hello", 10, 1000), "hello");
  const std::string wide = clip_to_width(std::string(500, 'A') + "\xe4\xb8\xad", 12, 300);
  EXPECT_LE(text_width(wide, 12), 300 + 1e-9);
  EXPECT_GT(text_width(wide, 12), 280);
  EXPECT_EQ(wide.substr(wide.size() - ellipsis.size()), ellipsis);
  // Wrapping: at spaces, each line within the width, the last clipped when lines run out.
  const std::string reason = "max_chunks: infeasible batch: 6060800 padded tokens need 93 chunks of 65536 rows, but "
                             "max_chunks is 16; set max_chunks to at least 93 or buffer_token_size to at least 378800";
  const auto two = wrap_to_width(reason, 13, 400, 5);
  ASSERT_GE(two.size(), 3u);
  std::string joined;
  for (const std::string& l : two) {
    EXPECT_LE(text_width(l, 13), 400 + 1e-9) << l;
    joined += (joined.empty() ? "" : " ") + l;
  }
  EXPECT_EQ(joined, reason);  // nothing lost when the lines suffice
  const auto one = wrap_to_width(reason, 13, 400, 1);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].substr(one[0].size() - ellipsis.size()), ellipsis);
  EXPECT_TRUE(wrap_to_width("", 13, 400, 3).empty());
  EXPECT_EQ(wrap_to_width(std::string(300, 'w'), 13, 100, 3).size(), 1u);  // one long word: clipped, not split
  // An invalid byte counts as one character and is not glued to its neighbours.
  EXPECT_EQ(clip_text("\xff\xffzz", 3), "\xff\xff" + ellipsis);
  EXPECT_EQ(xml_escape(clip_text(std::string(1000, 'a') + "\xc3", 999)), std::string(998, 'a') + ellipsis);
}

TEST(SvgWriter, SvgNumberHasAtMostTwoDecimalsAndNoTrailingZeros) {
  EXPECT_EQ(svg_number(12), "12");
  EXPECT_EQ(svg_number(100), "100");
  EXPECT_EQ(svg_number(0), "0");
  EXPECT_EQ(svg_number(3.5), "3.5");
  EXPECT_EQ(svg_number(3.25), "3.25");
  EXPECT_EQ(svg_number(3.14159), "3.14");
  EXPECT_EQ(svg_number(2.999), "3");
  EXPECT_EQ(svg_number(10.1), "10.1");
  EXPECT_EQ(svg_number(-7.5), "-7.5");
  EXPECT_EQ(svg_number(-0.001), "0");  // no "-0"
  EXPECT_EQ(svg_number(-0.0), "0");
  EXPECT_EQ(svg_number(1e6), "1000000");
  EXPECT_EQ(svg_number(std::nan("")), "0");
  EXPECT_EQ(svg_number(HUGE_VAL), "0");
  EXPECT_EQ(svg_number(-HUGE_VAL), "0");
}

TEST(SvgWriter, TextWidthCountsCharactersNotBytes) {
  EXPECT_DOUBLE_EQ(text_width("", 10), 0.0);
  EXPECT_DOUBLE_EQ(text_width("\xe2\x82\xac\xe2\x82\xac", 10), text_width("ab", 10));
  EXPECT_DOUBLE_EQ(text_width("abcd", 20), 2 * text_width("abcd", 10));
  // Generous for the labels: never narrower than DejaVu Sans draws them.
  for (const std::string label : {"s0 [0, 96)", "s12 [160, 208)", "s1 [1000000000, 1000001000)", "12 seqs", "s7"})
    EXPECT_GE(text_width(label, 11), dejavu_width(label, 11)) << label;
}

TEST(SvgWriter, WriterEscapesAttributesTextAndTitlesAndClosesEverything) {
  SvgWriter w(100.5, 50);
  w.open("g", {{"class", "a\"b"}});
  w.rect(1, 2, -3, 4, "#FFF\"", "tip <b>&");
  w.text(5, 6, "x < y & \x01", 12, {{"fill", "<red>"}});
  w.line(0, 0, 1.005, 2, "#000");
  w.element("desc", {}, "");
  w.open("g");
  const std::string svg = w.finish();
  EXPECT_EQ(svg.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg ", 0), 0u);
  EXPECT_NE(svg.find("width=\"100.5\" height=\"50\" viewBox=\"0 0 100.5 50\""), std::string::npos);
  EXPECT_NE(svg.find("class=\"a&quot;b\""), std::string::npos);
  EXPECT_NE(svg.find("width=\"0\""), std::string::npos);  // a negative width is clamped
  EXPECT_NE(svg.find("fill=\"#FFF&quot;\"><title>tip &lt;b&gt;&amp;</title></rect>"), std::string::npos);
  EXPECT_NE(svg.find("fill=\"&lt;red&gt;\">x &lt; y &amp; \xEF\xBF\xBD</text>"), std::string::npos);
  EXPECT_NE(svg.find("<desc/>"), std::string::npos);
  EXPECT_EQ(count(svg, "<g"), count(svg, "</g>"));
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  if (const auto ok = parser_accepts(svg)) EXPECT_TRUE(*ok);
  SvgWriter inline_writer(10, 10);
  EXPECT_EQ(inline_writer.finish(false).rfind("<svg ", 0), 0u);
}

TEST(Palette, TolMutedColoursAndNeighboursNeverShareOne) {
  const std::vector<std::string> tol = {"#CC6677", "#332288", "#DDCC77", "#117733", "#88CCEE",
                                        "#882255", "#44AA99", "#999933", "#AA4499"};
  ASSERT_EQ(kSwatchCount, tol.size());
  for (size_t b = 0; b < 20; ++b) {
    EXPECT_EQ(sequence_swatch(b).fill, tol[b % tol.size()]) << b;
    EXPECT_NE(sequence_swatch(b).fill, sequence_swatch(b + 1).fill) << b;
    EXPECT_NE(sequence_swatch(b).fill, kUnusedFill);
    EXPECT_NE(sequence_swatch(b).fill, "#FFFFFF");
  }
  EXPECT_EQ(kUnusedFill, "#DDDDDD");
  EXPECT_EQ(kBufferEndStroke, "#000000");
}

}  // namespace
}  // namespace mlaplan::render
