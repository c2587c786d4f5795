// A small strict reader for the two integer columns of a lengths file. (Debian packages a
// header-only CSV parser, libfccp-dev, but it would add a build dependency for two integer columns
// and its errors would need rewriting into the "path:LINE: column: problem; fix" form anyway.)
#include "mlaplan/workloads/lengths_csv.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "mlaplan/errors.hpp"
#include "mlaplan/io/input_file.hpp"

#include "mlaplan/models/ascii_lower.hpp"

namespace mlaplan::workloads {

namespace {

constexpr uint64_t kMaxTokens = 2147483647;  // 2^31 - 1: each value, and cached + new
const char* const kColumns[2] = {"cached_tokens", "new_tokens"};

struct Field {
  std::string text;
  bool quoted = false;
};

bool is_blank(char c) { return c == ' ' || c == '\t'; }

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && is_blank(s[b])) ++b;
  while (e > b && is_blank(s[e - 1])) --e;
  return s.substr(b, e - b);
}


bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path) {}

  [[noreturn]] void fail(size_t line, const std::string& column, const std::string& problem_and_fix) const {
    throw InputError(fmt::format("{}:{}: {}: {}", path_, line, column, problem_and_fix));
  }

  // The fields of one line (its end already removed). A field is text up to the next comma, or a
  // double-quoted string ("" inside it is one quote); blanks around either are dropped.
  std::vector<Field> split(const std::string& line, size_t line_no) const {
    std::vector<Field> fields;
    size_t i = 0;
    const size_t n = line.size();
    while (true) {
      Field f;
      while (i < n && is_blank(line[i])) ++i;
      if (i < n && line[i] == '"') {
        f.quoted = true;
        ++i;
        bool closed = false;
        while (i < n) {
          if (line[i] == '"') {
            if (i + 1 < n && line[i + 1] == '"') {
              f.text += '"';
              i += 2;
              continue;
            }
            closed = true;
            ++i;
            break;
          }
          f.text += line[i++];
        }
        if (!closed)
          fail(line_no, fmt::format("column {}", fields.size() + 1),
               "the quoted field has no closing quote; end it with \" or drop the quotes");
        while (i < n && is_blank(line[i])) ++i;
        if (i < n && line[i] != ',')
          fail(line_no, fmt::format("column {}", fields.size() + 1),
               fmt::format("text after the closing quote ('{}'); put a comma after the quoted field", line.substr(i)));
        f.text = trim(f.text);
      } else {
        const size_t comma = line.find(',', i);
        f.text = trim(line.substr(i, comma == std::string::npos ? std::string::npos : comma - i));
        i = comma == std::string::npos ? n : comma;
      }
      fields.push_back(std::move(f));
      if (i >= n) break;
      ++i;  // the comma; a trailing comma makes one more (empty) field
      if (i == n) {
        fields.push_back(Field{});
        break;
      }
    }
    return fields;
  }

  // A header row: column index of cached_tokens and of new_tokens.
  void header(const std::vector<Field>& fields, size_t line_no) {
    const std::string first = fields.front().text;
    if (all_digits(first) || (first.size() > 1 && first[0] == '-' && all_digits(first.substr(1))))
      fail(line_no, "header",
           fmt::format("the first row is data ('{}'), not the header; add the line cached_tokens,new_tokens above it",
                       first));
    for (size_t c = 0; c < fields.size(); ++c) {
      const std::string name = models::ascii_lower(fields[c].text);
      int which = name == kColumns[0] ? 0 : name == kColumns[1] ? 1 : -1;
      if (which < 0)
        fail(line_no, fmt::format("column {}", c + 1),
             fmt::format("'{}' is not a column of a lengths file; the header is cached_tokens,new_tokens (either "
                         "order) and nothing else",
                         fields[c].text));
      if (index_[which] >= 0)
        fail(line_no, fmt::format("column {}", c + 1),
             fmt::format("'{}' appears twice; the header is cached_tokens,new_tokens (either order)", fields[c].text));
      index_[which] = static_cast<int>(c);
    }
    for (int which = 0; which < 2; ++which) {
      if (index_[which] < 0)
        fail(line_no, kColumns[which],
             "missing from the header; write the header cached_tokens,new_tokens (either order)");
    }
  }

  Request row(const std::vector<Field>& fields, size_t line_no) const {
    const std::string order = fmt::format("{},{}", name(0), name(1));
    if (fields.size() > 2)
      fail(line_no, fmt::format("column {}", 3),
           fmt::format("extra value '{}'; write exactly two values per row ({})", fields[2].text, order));
    if (fields.size() < 2) fail(line_no, name(1), fmt::format("missing; write two values per row ({})", order));
    uint64_t v[2];
    for (int which = 0; which < 2; ++which) v[which] = number(fields[index_[which]].text, which, line_no);
    if (v[1] == 0) fail(line_no, kColumns[1], "0; every request needs at least 1 new token");
    if (v[0] + v[1] > kMaxTokens)
      fail(line_no, "cached_tokens + new_tokens",
           fmt::format("{} + {} = {}; keep a request's total below 2^31 = 2147483648 tokens", v[0], v[1], v[0] + v[1]));
    return Request{static_cast<uint32_t>(v[0]), static_cast<uint32_t>(v[1])};
  }

 private:
  // The name of the c-th column in the file's order.
  const char* name(int c) const { return index_[0] == c ? kColumns[0] : kColumns[1]; }

  uint64_t number(const std::string& text, int which, size_t line_no) const {
    const char* column = kColumns[which];
    const char* least = which == 0 ? "0 or more" : "1 or more";
    if (text.empty()) fail(line_no, column, fmt::format("empty; write a whole number of tokens, {}", least));
    if (text[0] == '-' && all_digits(text.substr(1)))  // -0 is not negative, only signed: say so
      fail(line_no, column,
           fmt::format("{} {}; write a whole number of tokens, {}", text,
                       text.find_first_not_of('0', 1) == std::string::npos ? "has a sign" : "is negative", least));
    if (!all_digits(text))
      fail(line_no, column,
           fmt::format("'{}' is not a whole number; write digits only (no sign, decimal point or separators), {}", text,
                       least));
    uint64_t v = 0;
    for (char c : text) {
      v = v * 10 + static_cast<uint64_t>(c - '0');
      if (v > kMaxTokens)
        fail(line_no, column, fmt::format("{} is too large; at most 2147483647 tokens (2^31 - 1)", text));
    }
    return v;
  }

  std::string path_;
  int index_[2] = {-1, -1};
};

}  // namespace

std::vector<Request> parse_lengths_csv(const std::string& text, const std::string& path) {
  Reader reader(path);
  std::vector<Request> requests;
  bool have_header = false;
  size_t start = 0;
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) start = 3;  // UTF-8 byte order mark
  size_t line_no = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string content = trim(line);
    if (content.empty() || content[0] == '#') continue;
    const std::vector<Field> fields = reader.split(line, line_no);
    if (!have_header) {
      reader.header(fields, line_no);
      have_header = true;
    } else {
      requests.push_back(reader.row(fields, line_no));
    }
  }
  if (requests.empty()) throw InputError(fmt::format("{}: no requests; add rows of cached_tokens,new_tokens", path));
  return requests;
}

std::vector<Request> read_lengths_csv(const std::string& path) {
  return parse_lengths_csv(io::read_input_file(path, "a CSV file with the columns cached_tokens,new_tokens"), path);
}

}  // namespace mlaplan::workloads
