// The two public trace formats, read line by line so a trace of any length streams. Mooncake's lines
// are JSON objects (nlohmann/json); Azure's rows are three plain fields, split here, with the CSV
// strictness of the lengths reader (explore/lengths_csv.cpp): no quotes in these files.
#include "mlaplan/replay/trace_reader.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sys/stat.h>

#include "mlaplan/errors.hpp"
#include "mlaplan/io/file_error.hpp"

namespace mlaplan::replay {

namespace {

constexpr uint64_t kMaxTokens = 2147483647;        // 2^31 - 1, as a lengths file allows
constexpr size_t kMaxLineBytes = size_t{16} << 20;  // a line longer than this is no trace line
const char* const kAzureColumns[3] = {"timestamp", "contexttokens", "generatedtokens"};
const char* const kAzureNames[3] = {"TIMESTAMP", "ContextTokens", "GeneratedTokens"};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  return s.substr(b, e - b);
}

std::vector<std::string> split_commas(const std::string& line) {
  std::vector<std::string> out;
  size_t at = 0;
  while (true) {
    const size_t comma = line.find(',', at);
    out.push_back(trim(line.substr(at, comma == std::string::npos ? std::string::npos : comma - at)));
    if (comma == std::string::npos) return out;
    at = comma + 1;
  }
}

// Days from 1970-01-01 to a civil date (Howard Hinnant's days_from_civil).
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

}  // namespace

TraceFormat parse_trace_format(const std::string& name) {
  const std::string n = lower(name);
  if (n == "auto") return TraceFormat::automatic;
  if (n == "mooncake") return TraceFormat::mooncake;
  if (n == "azure") return TraceFormat::azure;
  throw InputError(fmt::format("--replay-format {}: unknown format; choose auto, mooncake or azure", name));
}

const char* to_string(TraceFormat f) {
  switch (f) {
    case TraceFormat::mooncake: return "mooncake";
    case TraceFormat::azure: return "azure";
    default: return "auto";
  }
}

TraceReader::TraceReader(const std::string& path, TraceFormat format, uint32_t block_size)
    : path_(path), format_(format), block_size_(block_size) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw InputError(fmt::format("{}: is a folder; give a trace file (Mooncake JSONL or Azure CSV)", path));
  auto file = std::make_unique<std::ifstream>(path, std::ios::binary);
  if (!*file)
    throw InputError(fmt::format("{}: cannot open the trace: {}", path, io::file_error_cause(errno, io::FileRole::input)));
  owned_ = std::move(file);
  in_ = owned_.get();
  start();
}

TraceReader::TraceReader(std::istream& in, const std::string& path, TraceFormat format, uint32_t block_size)
    : in_(&in), path_(path), format_(format), block_size_(block_size) {
  start();
}

TraceReader::~TraceReader() = default;

bool TraceReader::read_line(std::string& line) {
  // A bounded getline: an endless line (a binary file, /dev/zero) is refused, not buffered.
  if (buffer_.empty()) buffer_.resize(kMaxLineBytes + 1);
  in_->getline(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
  const std::streamsize got = in_->gcount();
  if (in_->bad()) throw InputError(fmt::format("{}: reading the trace failed after line {}", path_, line_));
  if (in_->fail() && !in_->eof() && got == static_cast<std::streamsize>(buffer_.size()) - 1)
    throw InputError(fmt::format("{}:{}: the line is longer than {} MiB; this is not a trace (Mooncake JSONL or "
                                 "Azure CSV)",
                                 path_, line_ + 1, kMaxLineBytes >> 20));
  if (got == 0 && in_->eof()) return false;
  // gcount counts the newline getline consumed; the text stops before it.
  line.assign(buffer_.data(), static_cast<size_t>(got) - (in_->eof() ? 0 : 1));
  if (in_->eof()) in_->clear(std::ios::eofbit);  // a last line without a newline: the next call ends
  ++line_;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line_ == 1 && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);
  return true;
}

void TraceReader::start() {
  if (block_size_ == 0) throw InputError("--replay-block-size 0: a block holds at least one token; give 512 for Mooncake");
  std::string line;
  while (read_line(line)) {
    if (trim(line).empty()) continue;
    const std::string first = trim(line);
    if (format_ == TraceFormat::automatic) {
      if (first[0] == '{') {
        format_ = TraceFormat::mooncake;
      } else if (lower(first).find("timestamp") != std::string::npos || first.find(',') != std::string::npos) {
        format_ = TraceFormat::azure;
      } else {
        throw InputError(fmt::format("{}:{}: neither a Mooncake JSONL line (a JSON object) nor an Azure CSV header "
                                     "(TIMESTAMP,ContextTokens,GeneratedTokens); give --replay-format mooncake or azure",
                                     path_, line_));
      }
    }
    if (format_ == TraceFormat::azure) {
      const std::vector<std::string> names = split_commas(first);
      column_count_ = names.size();
      for (size_t c = 0; c < names.size(); ++c)
        for (int k = 0; k < 3; ++k)
          if (lower(names[c]) == kAzureColumns[k]) {
            if (columns_[k] >= 0)
              throw InputError(fmt::format("{}:{}: header: the column {} appears twice; keep one", path_, line_,
                                           kAzureNames[k]));
            columns_[k] = static_cast<int>(c);
          }
      for (int k = 0; k < 3; ++k)
        if (columns_[k] < 0)
          throw InputError(fmt::format("{}:{}: header: no column {}; an Azure trace's header is "
                                       "TIMESTAMP,ContextTokens,GeneratedTokens",
                                       path_, line_, kAzureNames[k]));
      return;
    }
    pending_ = line;
    return;
  }
  throw InputError(fmt::format("{}: no requests; a trace has one request per line (Mooncake JSONL) or per row after "
                               "the header (Azure CSV)",
                               path_));
}

std::optional<TraceRequest> TraceReader::next() {
  std::string line;
  while (true) {
    if (pending_) {
      line = std::move(*pending_);
      pending_.reset();
    } else if (!read_line(line)) {
      if (requests_ == 0)
        throw InputError(fmt::format("{}: no requests after the header; add rows of TIMESTAMP,ContextTokens,"
                                     "GeneratedTokens",
                                     path_));
      return std::nullopt;
    }
    if (trim(line).empty()) continue;
    TraceRequest r = format_ == TraceFormat::mooncake ? mooncake(line) : azure(line);
    if (requests_ > 0 && r.arrival_ms < last_ms_)
      throw InputError(fmt::format("{}:{}: {}: {} ms is before the previous request's {} ms; a trace is replayed in "
                                   "arrival order, so sort it by time",
                                   path_, line_, format_ == TraceFormat::mooncake ? "timestamp" : "TIMESTAMP",
                                   r.arrival_ms, last_ms_));
    last_ms_ = r.arrival_ms;
    ++requests_;
    return r;
  }
}

TraceRequest TraceReader::mooncake(const std::string& line) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    const size_t colon = what.find("] ");
    throw InputError(fmt::format("{}:{}: invalid JSON ({}); each line of a Mooncake trace is one JSON object", path_,
                                 line_, colon == std::string::npos ? what : what.substr(colon + 2)));
  }
  if (!j.is_object())
    throw InputError(fmt::format("{}:{}: a {} where a JSON object should be; each line of a Mooncake trace is one "
                                 "object with timestamp, input_length, output_length and hash_ids",
                                 path_, line_, j.type_name()));
  auto need = [&](const char* key) -> const nlohmann::json& {
    auto it = j.find(key);
    if (it == j.end())
      throw InputError(fmt::format("{}:{}: {}: missing; each line needs timestamp, input_length, output_length and "
                                   "hash_ids",
                                   path_, line_, key));
    return *it;
  };
  auto count = [&](const char* key, uint64_t low) -> uint32_t {
    const nlohmann::json& v = need(key);
    if (v.is_number_integer() && v.get<int64_t>() < 0)
      throw InputError(fmt::format("{}:{}: {}: {} is negative; a length is a count of tokens", path_, line_, key,
                                   v.get<int64_t>()));
    if (!v.is_number_unsigned())
      throw InputError(fmt::format("{}:{}: {}: {} is not a whole number of tokens", path_, line_, key, v.dump()));
    const uint64_t n = v.get<uint64_t>();
    if (n < low || n > kMaxTokens)
      throw InputError(fmt::format("{}:{}: {}: {} is outside {} .. {}", path_, line_, key, n, low, kMaxTokens));
    return static_cast<uint32_t>(n);
  };
  TraceRequest r;
  r.line = line_;
  const nlohmann::json& ts = need("timestamp");
  if (!ts.is_number() || !std::isfinite(ts.get<double>()) || ts.get<double>() < 0)
    throw InputError(fmt::format("{}:{}: timestamp: {} is not a time in ms (a number >= 0)", path_, line_, ts.dump()));
  r.arrival_ms = ts.get<double>();
  r.input_tokens = count("input_length", 1);
  r.output_tokens = count("output_length", 0);
  const nlohmann::json& ids = need("hash_ids");
  if (!ids.is_array())
    throw InputError(fmt::format("{}:{}: hash_ids: a {}, not a list of block ids", path_, line_, ids.type_name()));
  const uint64_t allowed = (uint64_t{r.input_tokens} + block_size_ - 1) / block_size_;
  if (ids.size() > allowed)
    throw InputError(fmt::format("{}:{}: hash_ids: {} blocks of {} tokens, but input_length {} fills at most {}; "
                                 "drop the extra ids or give the trace's --replay-block-size",
                                 path_, line_, ids.size(), block_size_, r.input_tokens, allowed));
  r.blocks.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!ids[i].is_number_unsigned())
      throw InputError(fmt::format("{}:{}: hash_ids[{}]: {} is not a block id (a whole number >= 0)", path_, line_, i,
                                   ids[i].dump()));
    r.blocks.push_back(ids[i].get<uint64_t>());
  }
  return r;
}

TraceRequest TraceReader::azure(const std::string& line) {
  const std::vector<std::string> f = split_commas(line);
  if (f.size() != column_count_)
    throw InputError(fmt::format("{}:{}: {} fields where the header has {}; each row is "
                                 "TIMESTAMP,ContextTokens,GeneratedTokens",
                                 path_, line_, f.size(), column_count_));
  TraceRequest r;
  r.line = line_;
  auto number = [&](int k, uint64_t low) -> uint32_t {
    const std::string& s = f[columns_[k]];
    if (!s.empty() && s[0] == '-')
      throw InputError(fmt::format("{}:{}: {}: {} is negative; a length is a count of tokens", path_, line_,
                                   kAzureNames[k], s));
    uint64_t v = 0;
    if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string::npos)
      throw InputError(fmt::format("{}:{}: {}: '{}' is not a whole number of tokens", path_, line_, kAzureNames[k], s));
    v = std::stoull(s);
    if (v < low || v > kMaxTokens)
      throw InputError(fmt::format("{}:{}: {}: {} is outside {} .. {}", path_, line_, kAzureNames[k], v, low, kMaxTokens));
    return static_cast<uint32_t>(v);
  };
  r.input_tokens = number(1, 1);
  r.output_tokens = number(2, 0);
  // "2023-11-16 18:17:03.9799600": a civil date and time (the trace's clock, no zone).
  const std::string& t = f[columns_[0]];
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, consumed = 0;
  double sec = 0;
  if (std::sscanf(t.c_str(), "%4d-%2d-%2d %2d:%2d:%lf%n", &y, &mo, &d, &h, &mi, &sec, &consumed) != 6 ||
      consumed != static_cast<int>(t.size()) || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec < 0 ||
      sec >= 61)
    throw InputError(fmt::format("{}:{}: TIMESTAMP: '{}' is not a time like 2023-11-16 18:17:03.9799600", path_, line_, t));
  const double ms = (static_cast<double>(days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d))) * 86400.0 +
                     h * 3600.0 + mi * 60.0 + sec) * 1000.0;
  if (!first_ms_) first_ms_ = ms;
  r.arrival_ms = ms - *first_ms_;
  return r;
}

}  // namespace mlaplan::replay
