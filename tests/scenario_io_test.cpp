// Every class of bad scenario input is refused with one message naming the file, the field (with
// its index) and the fix; good files in every accepted form load.
#include <gtest/gtest.h>

#include <cctype>
#include <ostream>

#include <nlohmann/json.hpp>

#include "mlaplan/errors.hpp"
#include "mlaplan/io/json_error.hpp"
#include "mlaplan/profile/json_text.hpp"
#include "mlaplan/io/plan_tables_io.hpp"
#include "mlaplan/io/printable.hpp"
#include "mlaplan/io/scenario_io.hpp"

using namespace mlaplan;

namespace {

const char* kGood = R"({"page_size": 128, "buffer_token_size": 512, "max_chunks": 4,
  "cache_lengths": [500, 0, 100], "input_row_offsets": [0, 9, 209, 229]})";

std::string error_of(const std::string& text) {
  try {
    io::parse_scenarios(text, "s.json", "s");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

// kGood with one key replaced or added.
std::string with(const std::string& key, const std::string& value) {
  std::string text = kGood;
  const std::string needle = "\"" + key + "\": ";
  const size_t at = text.find(needle);
  if (at == std::string::npos) return text.substr(0, text.size() - 1) + ", " + needle + value + "}";
  size_t end = at + needle.size();
  int depth = 0;
  for (; end < text.size(); ++end) {
    if (text[end] == '[') ++depth;
    if (text[end] == ']') --depth;
    if (depth == 0 && (text[end] == ',' || text[end] == '}')) break;
  }
  return text.substr(0, at) + needle + value + text.substr(end);
}

struct BadCase {
  std::string text;
  std::string message;  // must appear in the error
};

// Names each case by the start of its message, so test listings stay short and readable.
void PrintTo(const BadCase& c, std::ostream* os) {
  std::string label = c.message.substr(0, 40);
  for (char& ch : label) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  *os << label;
}

class BadScenario : public testing::TestWithParam<BadCase> {};

TEST_P(BadScenario, IsRefusedNamingTheField) {
  const std::string got = error_of(GetParam().text);
  EXPECT_NE(got.find(GetParam().message), std::string::npos) << "got: " << got;
  EXPECT_EQ(got.rfind("s.json", 0), 0u) << "the message must start with the file: " << got;
  EXPECT_EQ(got.find('\n'), std::string::npos) << "one line: " << got;
}

INSTANTIATE_TEST_SUITE_P(
    Inputs, BadScenario,
    testing::Values(
        BadCase{"{\"page_size\": 128,\n  \"max_chunks\" 4}", "s.json:2:16: invalid JSON"},
        BadCase{"", "s.json:1:1: invalid JSON"},
        BadCase{"[1, 2]", "expected a scenario object"},
        BadCase{with("cache_lengths", "[500, 0, -1]"), "cache_lengths[2]: expected a non-negative integer below 2^32, got -1"},
        BadCase{with("cache_lengths", "[500, 4294967296, 1]"), "cache_lengths[1]: expected a non-negative integer below 2^32"},
        BadCase{with("cache_lengths", "[500, 1.5, 1]"), "cache_lengths[1]: expected a non-negative integer below 2^32, got 1.5"},
        BadCase{with("cache_lengths", "[500, \"7\", 1]"), "cache_lengths[1]:"},
        BadCase{with("cache_lengths", "7"), "cache_lengths: expected an array of integers, got 7"},
        BadCase{with("input_row_offsets", "[0, 9, 8, 229]"), "input_row_offsets[2]: 8 is below the previous offset 9"},
        BadCase{with("input_row_offsets", "[0, 9, 209]"), "input_row_offsets: expected 4 values (batch_size + 1"},
        BadCase{with("input_lengths", "[1, 2, 3]"), "give either input_row_offsets or input_lengths, not both"},
        BadCase{R"({"page_size": 1, "buffer_token_size": 1, "max_chunks": 1, "cache_lengths": []})", "input_row_offsets: missing"},
        BadCase{R"({"page_size": 1, "buffer_token_size": 1, "cache_lengths": [], "input_lengths": []})", "max_chunks: missing"},
        BadCase{R"({"page_size": 1, "buffer_token_size": 1, "max_chunks": 1, "cache_lengths": [1], "input_lengths": [1, 2]})",
                "input_lengths: expected 1 values"},
        BadCase{R"({"page_size": 1, "buffer_token_size": 1, "max_chunks": 1, "cache_lengths": [0, 0], "input_lengths": [4294967295, 1]})",
                "input_lengths[1]: the running total"},
        BadCase{with("page_size", "0"), "page_size: expected an integer from 1 to 2^32 - 1, got 0"},
        BadCase{with("buffer_token_size", "2147483648"), "buffer_token_size: expected an integer from 1 to 2^31 - 1"},
        BadCase{with("buffer_token_size", "0"), "buffer_token_size: expected an integer from 1"},
        BadCase{with("max_chunks", "0"), "max_chunks: expected an integer from 1"},
        BadCase{with("max_chunks", "true"), "max_chunks: expected an integer from 1 to 2^32 - 1, got true"},
        BadCase{with("max_chunk", "4"), "max_chunk: unknown key; did you mean max_chunks?; the keys allowed here are"},
        BadCase{with("name", "\"\""), "name: expected a non-empty string"},
        BadCase{with("name", "3"), "name: expected a non-empty string"},
        BadCase{with("description", "[]"), "description: expected a string"},
        BadCase{std::string(kGood).substr(0, std::string(kGood).size() - 1) + ", \"page_size\": 64}",
                "page_size: key given twice"},
        BadCase{with("cache_lengths", "[4294967295, 0, 100]"), "cache_lengths[0]: the padded token total reaches"},
        BadCase{with("max_chunks", "4294967295"), "max_chunks: 4294967295 chunks x 4 columns"},
        BadCase{with("expected", "[]"), "expected: expected an object"},
        BadCase{with("expected", "{\"infeasable\": true}"), "expected.infeasable: unknown key"},
        BadCase{with("expected", "{\"infeasible\": 1}"), "expected.infeasible: expected true or false"},
        BadCase{with("expected", "{\"buffer_lengths\": [512, 384]}"), "expected.buffer_lengths: expected 4 values"},
        BadCase{with("expected", "{\"buffer_lengths\": [512, 384, -2, -1]}"), "expected.buffer_lengths[2]: expected -1 or"},
        BadCase{with("expected", "{\"cache_offsets\": [[0, 0, 0], [512, 0], [1, 2, 3], [1, 2, 3]]}"),
                "expected.cache_offsets[1]: expected a list of 3 integers"},
        BadCase{with("expected", "{\"buffer_row_offsets\": [[0, 0, 0, 0]]}"), "expected.buffer_row_offsets: expected 4 rows"},
        BadCase{with("expected", "{\"infeasible\": true, \"buffer_lengths\": [1, 1, 1, 1]}"),
                "expected.buffer_lengths: an infeasible scenario has no plan"},
        BadCase{with("expected", "{\"min_max_chunks\": 3}"), "expected.min_max_chunks: only allowed with"},
        BadCase{"{\"scenarios\": 3}", "scenarios: expected an array"},
        BadCase{"{\"scenarios\": [], \"name\": \"x\"}", "may hold no other top-level key"},
        BadCase{std::string("{\"scenarios\": [") + kGood + ", " + with("cache_lengths", "[1, -1, 0]") + "]}",
                "s.json: scenarios[1].cache_lengths[1]: expected a non-negative integer"},
        // The entry is the field: not "scenarios[1].scenarios[1]".
        BadCase{std::string("{\"scenarios\": [") + kGood + ", [3]]}", "s.json: scenarios[1]: expected a scenario object, got [3]"}));

}  // namespace

TEST(ScenarioIo, LoadsEveryAcceptedForm) {
  const auto one = io::parse_scenarios(kGood, "dir/s.json", "s");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].name, "s");  // the file's stem
  EXPECT_EQ(one[0].batch.batch_size(), 3u);

  const auto lengths = io::parse_scenarios(
      R"({"name": "n", "page_size": 128, "buffer_token_size": 512, "max_chunks": 4,
          "cache_lengths": [500, 0, 100], "input_lengths": [9, 200, 20]})", "f.json", "f");
  EXPECT_EQ(lengths[0].name, "n");
  EXPECT_EQ(lengths[0].batch.input_row_offsets, (std::vector<uint32_t>{0, 9, 209, 229}));

  // JSON's -0 is zero (it was refused as "expected a non-negative integer, got 0").
  const auto negative_zero = io::parse_scenarios(
      R"({"page_size": 128, "buffer_token_size": 512, "max_chunks": 4, "cache_lengths": [-0, 0], "input_lengths": [-0, 3]})",
      "z.json", "z");
  EXPECT_EQ(negative_zero[0].batch.cache_lengths, (std::vector<uint32_t>{0, 0}));
  EXPECT_EQ(negative_zero[0].batch.input_row_offsets, (std::vector<uint32_t>{0, 0, 3}));

  const auto list = io::parse_scenarios(std::string("{\"scenarios\": [") + kGood + ", " + kGood + "]}", "l.json", "l");
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[1].name, "l[1]");
  EXPECT_EQ(list[1].field_prefix, "scenarios[1].");
}

TEST(ScenarioIo, WrittenScenariosReadBackIdentically) {
  auto s = io::parse_scenarios(with("expected", R"({"buffer_lengths": [512, 384, -1, -1], "padded_tokens": 896})"), "s.json",
                           "s")[0];
  s.description = "round trip";
  const auto back = io::parse_scenarios(io::scenario_to_json(s), "t.json", "t")[0];
  EXPECT_EQ(back.name, s.name);
  EXPECT_EQ(back.description, "round trip");
  EXPECT_EQ(back.batch.cache_lengths, s.batch.cache_lengths);
  EXPECT_EQ(back.batch.input_row_offsets, s.batch.input_row_offsets);
  ASSERT_TRUE(back.expected && back.expected->buffer_lengths && back.expected->padded_tokens);
  EXPECT_EQ(*back.expected->buffer_lengths, (std::vector<int32_t>{512, 384, -1, -1}));
  EXPECT_FALSE(back.expected->cache_offsets);
}

TEST(ScenarioIo, MissingFileAndDirectoryAreInputErrors) {
  EXPECT_THROW(io::load_scenario_file("/nonexistent/x.json"), InputError);
  EXPECT_THROW(io::load_scenario_file("/tmp"), InputError);
}

// what() is a C string: a NUL quoted from the input would cut the message before the field and the fix.
TEST(InputErrorText, ANulByteIsShownEscapedSoTheMessageIsWhole) {
  const char raw[] = "a.json: na\0me: unknown key";
  const InputError e(std::string(raw, sizeof raw - 1));
  EXPECT_STREQ(e.what(), "a.json: na\\x00me: unknown key");
  const std::string msg = error_of(std::string("{\"na\\u0000me\": 1}"));
  EXPECT_NE(msg.find("na\\x00me"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown key"), std::string::npos) << msg;
}

// C1 controls (CSI U+009B drives a terminal like ESC [) and bytes that are not UTF-8 are shown as
// \xNN; other UTF-8 text passes unchanged.
TEST(Printable, EscapesC1ControlsAndBytesOutsideUtf8) {
  EXPECT_EQ(io::printable("a\xc2\x9b" "31mX"), "a\\xc2\\x9b31mX");
  EXPECT_EQ(io::printable("\xc2\x85"), "\\xc2\\x85");
  EXPECT_EQ(io::printable("\xff\xfe" "c"), "\\xff\\xfec");
  EXPECT_EQ(io::printable("b\xff.json"), "b\\xff.json");
  EXPECT_EQ(io::printable("\xc3"), "\\xc3");                  // cut short
  EXPECT_EQ(io::printable("\xc0\xaf"), "\\xc0\\xaf");          // overlong '/'
  EXPECT_EQ(io::printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a UTF-16 surrogate
  EXPECT_EQ(io::printable("caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80 \xc2\xa0"), "caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80 \xc2\xa0");
  EXPECT_EQ(io::printable("a\x1b[2J\r\n"), "a\\x1b[2J\\r\\n");
}

TEST(Printable, ClippingKeepsWholeCharacters) {
  const std::string line = io::printable_line("ab\xe4\xb8\xad", 3);
  EXPECT_EQ(line, "ab... (3 more bytes)");
}

// A user string that is not UTF-8 (a Latin-1 file name) is written with U+FFFD, not thrown on.
TEST(JsonText, ReplacesBytesThatAreNotUtf8) {
  const nlohmann::json j = {{"file", "b\xff.json"}};
  EXPECT_EQ(profile::json_text(j), "{\"file\":\"b\xef\xbf\xbd.json\"}");
  const nlohmann::json plain = {{"a", 1}};
  EXPECT_EQ(profile::json_text(plain, 1), plain.dump(1));
}

// Plan tables are what the gate compares against: the value it checks must be the only one given.
TEST(PlanTablesIo, AKeyGivenTwiceIsRefused) {
  try {
    io::parse_plan_file(R"({"infeasible": true, "min_max_chunks": 1, "min_max_chunks": 3})", "p.json");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "p.json: min_max_chunks: key given twice in one object; keep one");
  }
  EXPECT_THROW(io::parse_json_strict(R"({"scenarios": [{"a": 1, "b": {"a": 2, "a": 3}}]})", "q.json"), InputError);
  EXPECT_NO_THROW(io::parse_json_strict(R"({"a": {"a": 1}, "b": [{"a": 1}, {"a": 2}]})", "q.json"));
}
