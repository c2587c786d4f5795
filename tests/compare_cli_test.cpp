// run with several policies (--policy all, variants, kind/variant lists), and the pictures and pages
// of run and sweep (--svg, --html) end to end: what is written, that it is self-contained, and that
// hostile scenario names come out escaped and clipped. Pixels are checked in render_pixels_test.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"

using nlohmann::json;
using mlaplan::test::run_cli;
using mlaplan::test::slurp;
namespace fs = std::filesystem;
using mlaplan::test::kScenarios;
using mlaplan::test::scratch;
using mlaplan::test::expect_bad_input;

namespace {

size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

// Nothing the page would fetch: no scripts, stylesheets, frames or images, and no tag pointing at a
// URL; the SVG namespace is a name, not a fetch. (Text may mention URLs: it is escaped.)
void expect_self_contained(const std::string& html) {
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* bad : {"<script", "<link", "<iframe", "<img", "<object", "<embed", "@import", "url(h", "url(f"})
    EXPECT_EQ(html.find(bad), std::string::npos) << bad;
  EXPECT_FALSE(std::regex_search(html, std::regex(R"(<[a-zA-Z][^>]*\s(src|href|xlink:href)\s*=)")));
  EXPECT_FALSE(std::regex_search(html, std::regex(R"(<[^>]*(https?|file|ftp)://(?!www\.w3\.org/2000/svg"))")));
}

}  // namespace

TEST(CompareCli, PolicyListPlansTheBatchUnderEach) {
  const auto r = run_cli("run " + kScenarios +
                         "/worked-example.json --backend cpu --format json --policy max,packed/trtllm,even-split/sglang");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j["scenarios"].size(), 3u);
  EXPECT_EQ(j["scenarios"][0]["policy"], "max");
  EXPECT_EQ(j["scenarios"][0]["buffer_lengths"], json::parse("[512, 384, -1, -1]"));
  EXPECT_EQ(j["scenarios"][1]["policy"], "packed/trtllm");
  EXPECT_EQ(j["scenarios"][1]["buffer_lengths"], json::parse("[512, 88, -1, -1]"));
  EXPECT_EQ(j["scenarios"][2]["policy"], "even-split/sglang");
  EXPECT_EQ(j["scenarios"][2]["chunks_used"], 3);
  for (const json& s : j["scenarios"]) EXPECT_EQ(s["verification"]["status"], "pass") << s["policy"];
}

TEST(CompareCli, AllAndVariantsNameThePolicies) {
  const auto all = json::parse(run_cli("run " + kScenarios + "/worked-example.json --backend cpu --format json --policy all").out);
  std::vector<std::string> names;
  for (const json& s : all["scenarios"]) names.push_back(s["policy"]);
  EXPECT_EQ(names, (std::vector<std::string>{"max", "packed", "even-split/vllm", "sglang (even split)",
                                            "trtllm (packed/trtllm)"}));  // every engine
  // The variant options apply to the kinds "all" names.
  const auto sg = json::parse(run_cli("run " + kScenarios +
                                      "/worked-example.json --backend cpu --format json --policy all --even-split sglang")
                                  .out);
  EXPECT_EQ(sg["scenarios"][2]["policy"], "even-split/sglang");
  const auto five = json::parse(run_cli("run " + kScenarios + "/worked-example.json --backend cpu --format json --policy variants").out);
  names.clear();
  for (const json& s : five["scenarios"]) names.push_back(s["policy"]);
  EXPECT_EQ(names, (std::vector<std::string>{"max", "packed", "packed/trtllm", "even-split/vllm", "even-split/sglang"}));
  // Repeats are dropped.
  const auto twice = json::parse(run_cli("run " + kScenarios + "/worked-example.json --backend cpu --format json --policy packed,packed/vllm").out);
  EXPECT_EQ(twice["policy"], "packed");  // one plan: a single object, as with one policy
}

TEST(CompareCli, TableEndsWithTheComparison) {
  const auto r = run_cli("run " + kScenarios + "/worked-example.json --backend cpu --policy all");
  ASSERT_EQ(r.code, 0) << r.err;
  const size_t at = r.out.find("policies compared on worked-example:");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string tail = r.out.substr(at);
  // The policy column is as wide as the longest name (an engine's), so every row's chunks end where
  // the header's "chunks" ends.
  std::istringstream lines(tail);
  std::string line, header;
  std::getline(lines, line);
  std::getline(lines, header);
  const size_t end = header.find("chunks") + 6;
  ASSERT_NE(header.find("chunks"), std::string::npos) << tail;
  std::map<std::string, std::string> chunks;  // policy -> its chunks cell
  while (std::getline(lines, line) && !line.empty() && line[0] != '(') {
    ASSERT_GE(line.size(), end) << line;
    ASSERT_EQ(line[end], ' ') << tail;  // the cell ends under the header's
    const size_t name_end = line.find("  ");
    const size_t cell = line.find_last_of(' ', end - 1) + 1;
    chunks[line.substr(0, name_end)] = line.substr(cell, end - cell);
  }
  EXPECT_EQ(chunks["max"], "2") << tail;
  EXPECT_EQ(chunks["packed"], "2") << tail;
  EXPECT_TRUE(chunks.count("even-split/vllm")) << tail;
  EXPECT_TRUE(chunks.count("trtllm (packed/trtllm)")) << tail;
}

// With a cost file, a policy its GPU runs on a whole-context path shows no chunks or fill (the plan
// is not what runs), and under eager timing every row its host-bound share.
TEST(CompareCli, WholeContextRowsShowNoChunksAndEagerRowsTheirHostShare) {
  const std::string base = "run " + kScenarios + "/worked-example.json --backend cpu --policy variants --model deepseek-v3 --tp 8 "
                           "--cost " + mlaplan::test::kData + "/cost/deepseek-v3-tp8-eager-example.json";
  for (const char* timing : {"graph", "eager"}) {
    const auto r = run_cli(base + " --timing " + timing);
    ASSERT_EQ(r.code, 0) << r.err;
    const std::string tail = r.out.substr(r.out.find("policies compared on worked-example:"));
    const bool eager = std::string(timing) == "eager";
    EXPECT_EQ(tail.find("host-bound") != std::string::npos, eager) << tail;
    // TensorRT-LLM runs the whole context at once on the example's H200.
    const size_t trt = tail.find("\npacked/trtllm ");
    ASSERT_NE(trt, std::string::npos) << tail;
    const std::string row = tail.substr(trt + 1, tail.find('\n', trt + 1) - trt - 1);
    EXPECT_NE(row.find("-       -"), std::string::npos) << row;
    EXPECT_NE(row.find("one-shot"), std::string::npos) << row;
    EXPECT_NE(tail.find("\nmax                         2   87.5%"), std::string::npos) << tail;
    EXPECT_NE(tail.find("(-: the path runs the whole context at once"), std::string::npos) << tail;
  }
}

TEST(CompareCli, ARefusalIsShownNotFatal) {
  const std::string file = kScenarios + "/infeasible-too-long.json --backend cpu";
  // Alone, max refuses the batch, as its expected block says: exit 0, the refusal naming max_chunks.
  const auto alone = run_cli("run " + file);
  EXPECT_EQ(alone.code, 0) << alone.err;
  EXPECT_NE(alone.out.find("refused: max_chunks: infeasible batch"), std::string::npos) << alone.out;
  // Compared, the refusal is one of the outcomes.
  const auto r = run_cli("run " + file + " --format json --policy all");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j["scenarios"].size(), 5u);  // all: every engine
  const json& max = j["scenarios"][0];
  EXPECT_EQ(max["policy"], "max");
  EXPECT_NE(max["refused"].get<std::string>().find("max_chunks"), std::string::npos) << max;
  EXPECT_FALSE(max.contains("buffer_lengths"));
  EXPECT_EQ(j["scenarios"][1]["policy"], "packed");
  EXPECT_EQ(j["scenarios"][1]["chunks_used"], 2);  // 500 + 300 context tokens in 512-row chunks
  const auto t = run_cli("run " + file + " --policy all");
  EXPECT_NE(t.out.find("refused: max_chunks"), std::string::npos) << t.out;
}

TEST(CompareCli, BadPolicyListsAndFormats) {
  const std::string we = "run " + kScenarios + "/worked-example.json --backend cpu";
  expect_bad_input(we + " --policy packed/foo", "unknown variant 'foo'");
  expect_bad_input(we + " --policy max,pakced", "--policy pakced: unknown policy");
  expect_bad_input(we + " --policy all --format csv", "--format csv");
  const fs::path dir = scratch("badpath");
  expect_bad_input(we + " --svg " + (dir / "no/such/folder/p.svg").string(), "no/such/folder");
  expect_bad_input(we + " --html " + (dir / "no/such/folder/p.html").string(), "check that its folder exists");
  expect_bad_input("sweep --workload short-chat --batches 10 --svg " + (dir / "no/such/folder/s.svg").string(),
                   "check that its folder exists");
  expect_bad_input("sweep --workload short-chat --batches 10 --html " + (dir / "no/such/folder/s.html").string(),
                   "check that its folder exists");
  fs::remove_all(dir);
}

TEST(CompareCli, SvgAndHtmlOfAComparison) {
  const fs::path dir = scratch("pictures");
  const std::string svg = (dir / "p.svg").string(), html = (dir / "p.html").string();
  const auto r = run_cli("run " + kScenarios + "/deepseek-v3-mixed.json --backend cpu --policy all --model deepseek-v3 --svg " +
                         svg + " --html " + html);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string s = slurp(svg);
  EXPECT_EQ(s.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_EQ(count(s, "<g class=\"panel\">"), 5u);  // all: every engine
  // The chunk counts come first, wrapped to the width.
  EXPECT_NE(s.find(">chunks used: max 9 chunks | packed 10 chunks<"), std::string::npos);
  EXPECT_NE(s.find(">even-split/vllm 29 chunks (over max_chunks 16)<"), std::string::npos);
  EXPECT_NE(s.find("deepseek-v3 TP 1 bf16: buffer 1.00 GiB"), std::string::npos);  // --model: the memory in the header
  EXPECT_NE(s.find("<title>sequence 8: tokens [0, 3072) in buffer rows [13312, 16384) of chunk 3"), std::string::npos);
  const std::string h = slurp(html);
  expect_self_contained(h);
  EXPECT_EQ(count(h, "<svg "), 1u);  // one picture per scenario, the policies as its panels
  EXPECT_EQ(h.find("<?xml"), std::string::npos);  // inline SVG carries no XML declaration
  EXPECT_NE(h.find("<td>even-split/vllm</td><td class=\"num\">29</td>"), std::string::npos);
  EXPECT_NE(h.find("<details>"), std::string::npos);  // the text tables, folded
  fs::remove_all(dir);
}

TEST(CompareCli, HostileNamesComeOutEscapedAndClipped) {
  const fs::path dir = scratch("hostile");
  const std::string name = "<script>alert(\"x\")</script>&'\x01\x1b[31m" + std::string(100000, 'A') + "\xff\xfe";
  json j = json::parse(slurp(kScenarios + "/worked-example.json"));
  j["name"] = name;
  j["description"] = "<img src=http://example.com/x.png>";
  j.erase("expected");
  {
    std::ofstream f(dir / "hostile.json");
    f << j.dump(-1, ' ', false, json::error_handler_t::ignore);
  }
  const std::string svg = (dir / "p.svg").string(), html = (dir / "p.html").string();
  const auto r = run_cli("run " + (dir / "hostile.json").string() + " --backend cpu --policy all --svg " + svg + " --html " + html);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const std::string& path : {svg, html}) {
    const std::string out = slurp(path);
    EXPECT_EQ(out.find("<script"), std::string::npos) << path;
    EXPECT_EQ(out.find("<img"), std::string::npos) << path;
    EXPECT_NE(out.find("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;"), std::string::npos) << path;
    for (char c : out) EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 && c != '\n') << path;
  }
  // The picture clips the name; the page names it in full once (its heading), escaped.
  EXPECT_LT(slurp(svg).size(), 60000u);
  EXPECT_EQ(count(slurp(svg), std::string(200, 'A')), 0u);
  expect_self_contained(slurp(html));
  EXPECT_NE(slurp(html).find("&lt;img src=http://example.com/x.png&gt;"), std::string::npos);
  fs::remove_all(dir);
}

TEST(CompareCli, SweepWritesItsPlotAndPage) {
  const fs::path dir = scratch("sweep");
  const std::string svg = (dir / "s.svg").string(), html = (dir / "s.html").string();
  const auto r = run_cli("sweep --workload short-chat --batches 200 --buffer-tokens 4096,16384,65536 --recommend "
                         "--max-iterations 2 --svg " + svg + " --html " + html);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string s = slurp(svg);
  EXPECT_EQ(s.rfind("<?xml", 0), 0u);
  EXPECT_NE(s.find("K = 2"), std::string::npos);
  const std::string h = slurp(html);
  expect_self_contained(h);
  EXPECT_NE(h.find("<h2>Recommendation</h2>"), std::string::npos);
  EXPECT_NE(h.find("<th>p99</th>"), std::string::npos);
  // 5 policies (all: every engine) x 5 buffers: the grid's 3 and, with --recommend, the engines'
  // defaults that are not on it (SGLang's 131072, TensorRT-LLM's 4 x 8192), and MAX's default one shot
  // (16384 at M=1)
  // in the table within the window and again among every column, behind a <details>.
  EXPECT_EQ(count(h, "<tr><td>"), 2 * 26u);
  // The answer first: the recommendation above the picture, the settings above every column.
  EXPECT_LT(h.find("<h2>Recommendation</h2>"), h.find("<svg"));
  EXPECT_LT(h.find("<h2>The settings</h2>"), h.find("<details>"));
  EXPECT_LT(h.find("<details>"), h.find("<th>q merges</th>"));
  fs::remove_all(dir);
}
