// Red-team findings in the readers and writers: a file name that is not UTF-8 in every JSON writer,
// duplicate keys in plan tables and model configs, NUL bytes in messages, and C1 controls, bytes
// outside UTF-8 and a model config's name on stdout and stderr.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"

// The file's own namespace, in a unity build too: its expect_one_error also wants nothing on stdout.
namespace robustness_redteam_readers_test {

using mlaplan::test::CliResult;
using mlaplan::test::run_cli;
using mlaplan::test::slurp;
namespace fs = std::filesystem;
using json = nlohmann::json;

using mlaplan::test::kScenarios;
using mlaplan::test::kData;
using mlaplan::test::lines;
using mlaplan::test::has;
using mlaplan::test::scratch;
using mlaplan::test::write;

namespace {

const std::string kWe = kScenarios + "/worked-example.json";

// The path as one shell word (no single quote in any path these tests make).
std::string sh(const fs::path& p) { return "'" + p.string() + "'"; }

void expect_one_error(const CliResult& r, const std::string& needle) {
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("mlaplan: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "wanted: " << needle << "\ngot: " << r.err;
  EXPECT_EQ(r.out, "") << r.out;
}

// Nothing a terminal would act on: C0 controls (but newline), DEL, C1 controls (as UTF-8) and bytes
// that cannot start or continue UTF-8 (0xC0, 0xC1, 0xF5..0xFF).
void expect_terminal_safe(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') continue;
    EXPECT_FALSE(c < 0x20 || c == 0x7f) << "raw control byte " << int(c) << " in:\n" << text;
    EXPECT_FALSE(c == 0xc0 || c == 0xc1 || c >= 0xf5) << "raw byte " << int(c) << " in:\n" << text;
    if (c == 0xc2 && i + 1 < text.size())
      EXPECT_FALSE(static_cast<unsigned char>(text[i + 1]) < 0xa0) << "raw C1 control in:\n" << text;
  }
}

const std::string kBadName = "b\xff.json";  // Latin-1 ÿ: not UTF-8

}  // namespace

TEST(RobustReaders, VerifyReportWithAFileNameThatIsNotUtf8) {
  const fs::path d = scratch("verify_report");
  fs::copy_file(kWe, d / kBadName);
  const CliResult v = run_cli("verify " + sh(d / kBadName) + " --backend cpu --report " + sh(d / "r.json"));
  EXPECT_EQ(v.code, 0) << v.err;
  EXPECT_FALSE(has(v.err, "internal error")) << v.err;
  const json report = json::parse(slurp(d / "r.json"));  // valid JSON, the bad byte as U+FFFD
  EXPECT_TRUE(has(report.dump(), "b\xef\xbf\xbd.json")) << report.dump();
  fs::remove_all(d);
}

TEST(RobustReaders, SweepJsonWithAFileNameThatIsNotUtf8) {
  const fs::path d = scratch("sweep_json");
  fs::copy_file(kWe, d / kBadName);
  const CliResult r = run_cli("sweep " + sh(d / kBadName) + " --format json --no-progress");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(has(r.err, "internal error")) << r.err;
  EXPECT_NO_THROW(json::parse(r.out)) << r.out;
  EXPECT_TRUE(has(r.out, "\xef\xbf\xbd"));

  write(d / "l\xff.csv", "cached_tokens,new_tokens\n0,10\n");
  const CliResult l = run_cli("sweep --lengths " + sh(d / "l\xff.csv") + " --format json --no-progress");
  EXPECT_EQ(l.code, 0) << l.err;
  EXPECT_FALSE(has(l.err, "internal error")) << l.err;
  EXPECT_NO_THROW(json::parse(l.out)) << l.out;
  fs::remove_all(d);
}

TEST(RobustReaders, APlanFileWithAKeyGivenTwiceIsRefused) {
  const fs::path d = scratch("plan_dup");
  write(d / "p.json", R"({"infeasible": true, "min_max_chunks": 1, "min_max_chunks": 3})");
  const CliResult r = run_cli("verify --plan " + sh(d / "p.json") + " " + kScenarios + "/infeasible-too-long.json");
  expect_one_error(r, "p.json: min_max_chunks: key given twice in one object; keep one");
  fs::remove_all(d);
}

TEST(RobustReaders, AModelConfigWithAKeyGivenTwiceIsRefused) {
  const fs::path d = scratch("model_dup");
  std::string text = slurp(kData + "/deepseek_v3_config.json");
  text.insert(text.find('{') + 1, "\"num_attention_heads\": 3, ");
  write(d / "c.json", text);
  const CliResult r = run_cli("run " + kWe + " --backend cpu --model-config " + sh(d / "c.json"));
  expect_one_error(r, "c.json: num_attention_heads: key given twice in one object; keep one");
  fs::remove_all(d);
}

TEST(RobustReaders, ANulByteDoesNotCutTheMessageShort) {
  const fs::path d = scratch("nul");
  write(d / "a.json", R"({"na\u0000me": "x", "page_size": 4, "buffer_token_size": 8, "max_chunks": 1, "cache_lengths": [1], "input_lengths": [1]})");
  expect_one_error(run_cli("run " + sh(d / "a.json") + " --backend cpu"), "na\\x00me: unknown key; did you mean name?; the keys allowed here are");

  const char csv[] = "cached_tokens\0,new_tokens\n0,10\n";
  write(d / "l.csv", std::string(csv, sizeof csv - 1));
  const CliResult g = run_cli("gen --lengths " + sh(d / "l.csv"));
  expect_one_error(g, "cached_tokens\\x00");
  EXPECT_GT(g.err.size(), g.err.find("cached_tokens\\x00") + 20) << g.err;  // the fix follows
  fs::remove_all(d);
}

TEST(RobustReaders, AModelConfigNameIsEscapedInRunsMemoryLine) {
  const fs::path d = scratch("model_name");
  json cfg = json::parse(slurp(kData + "/deepseek_v3_config.json"));
  cfg["model_type"] = "m\x1b[31mX\r";
  write(d / "c.json", cfg.dump());
  const CliResult r = run_cli("run " + kWe + " --backend cpu --model-config " + sh(d / "c.json"));
  EXPECT_EQ(r.code, 0) << r.err;
  expect_terminal_safe(r.out);
  EXPECT_TRUE(has(r.out, "memory    m\\x1b[31mX\\r TP")) << r.out;
  fs::remove_all(d);
}

TEST(RobustReaders, C1ControlsAndBytesOutsideUtf8AreEscaped) {
  const fs::path d = scratch("c1");
  json s = json::parse(slurp(kWe));
  s["name"] = "n\xc2\x9b" "31mred \xc3\xa9\xe4\xb8\xad";
  s["description"] = "d\xc2\x9b" "2J";
  write(d / "a.json", s.dump());
  const CliResult r = run_cli("run " + sh(d / "a.json") + " --backend cpu");
  EXPECT_EQ(r.code, 0) << r.err;
  expect_terminal_safe(r.out);
  EXPECT_TRUE(has(r.out, "n\\xc2\\x9b31mred \xc3\xa9\xe4\xb8\xad")) << r.out;  // é and 中 kept
  EXPECT_TRUE(has(r.out, "d\\xc2\\x9b2J")) << r.out;

  // A UTF-16 CSV: its byte-order mark is shown escaped in the one error line.
  write(d / "u.csv", std::string("\xff\xfe" "c\0a\0", 6));
  const CliResult u = run_cli("gen --lengths " + sh(d / "u.csv"));
  expect_one_error(u, "\\xff\\xfe");
  expect_terminal_safe(u.err);

  // gen's note names a --lengths path holding 0xFF.
  write(d / "l\xff.csv", "cached_tokens,new_tokens\n0,10\n");
  const CliResult g = run_cli("gen --lengths " + sh(d / "l\xff.csv") + " -o " + sh(d / "out.json"));
  EXPECT_EQ(g.code, 0) << g.err;
  expect_terminal_safe(g.err);
  EXPECT_TRUE(has(g.err, "l\\xff.csv")) << g.err;
  fs::remove_all(d);
}

}  // namespace robustness_redteam_readers_test
