// The two public trace formats, read line by line so a trace of any length streams. Mooncake's lines
// are JSON objects (nlohmann/json); Azure's rows are three plain fields, split here, with the CSV
// strictness of the lengths reader (workloads/lengths_csv.cpp): no quotes in these files.
#include "mlaplan/replay/trace_reader.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <set>
#include <streambuf>

#include "mlaplan/errors.hpp"
#include "mlaplan/io/file_error.hpp"
#include "mlaplan/profile/stop_request.hpp"

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

bool leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

unsigned days_in_month(int64_t y, unsigned m) {
  static const unsigned days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && leap(y) ? 29 : days[m - 1];
}

// A JSON count as nlohmann holds it: non-negative integers are unsigned, negative ones signed, and
// "-0" a signed 0, which is 0. False for anything else (a fraction, a string).
bool whole(const nlohmann::json& v, uint64_t& out) {
  if (v.is_number_unsigned()) {
    out = v.get<uint64_t>();
    return true;
  }
  if (v.is_number_integer() && v.get<int64_t>() == 0) {
    out = 0;
    return true;
  }
  return false;
}

bool negative(const nlohmann::json& v) { return v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0; }

}  // namespace

// The trace's file descriptor as a stream buffer. Unlike std::filebuf, a read that a signal interrupts
// (EINTR: the handlers are installed without SA_RESTART) is retried unless a stop was requested, and
// then ends the reading as an interruption, not as "Interrupted system call" (a FIFO no one writes,
// a pipe that never ends).
class TraceReader::FdBuffer : public std::streambuf {
 public:
  explicit FdBuffer(int fd) : fd_(fd) {}
  ~FdBuffer() override { ::close(fd_); }
  bool interrupted() const { return interrupted_; }
  int error() const { return error_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    for (;;) {
      const ssize_t n = ::read(fd_, data_, sizeof data_);
      if (n > 0) {
        setg(data_, data_, data_ + n);
        return traits_type::to_int_type(*gptr());
      }
      if (n == 0) return traits_type::eof();
      if (errno != EINTR) {
        error_ = errno;
        return traits_type::eof();
      }
      if (profile::stop_requested()) {
        interrupted_ = true;
        return traits_type::eof();
      }
    }
  }

 private:
  int fd_;
  bool interrupted_ = false;
  int error_ = 0;
  char data_[1 << 16];
};

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
  // A FIFO with no writer blocks the open: Ctrl-C (EINTR, then the stop request) ends the wait.
  int fd = -1;
  while ((fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC)) < 0 && errno == EINTR)
    if (profile::stop_requested()) throw Interrupted(fmt::format("interrupted while opening the trace {}", path));
  if (fd < 0)
    throw InputError(fmt::format("{}: cannot open the trace: {}", path, io::file_error_cause(errno, io::FileRole::input)));
  fd_buffer_ = std::make_unique<FdBuffer>(fd);  // closes fd on every way out from here
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
    throw InputError(fmt::format("{}: is a folder; give a trace file (Mooncake JSONL or Azure CSV)", path));
  owned_ = std::make_unique<std::istream>(fd_buffer_.get());
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
  if (fd_buffer_ && fd_buffer_->interrupted())
    throw Interrupted(fmt::format("interrupted while reading the trace {} (after line {})", path_, line_));
  if (fd_buffer_ && fd_buffer_->error())
    throw InputError(fmt::format("{}: reading the trace failed after line {}: {}", path_, line_,
                                 io::file_error_cause(fd_buffer_->error(), io::FileRole::input)));
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
  // The field being read, for a number past a double's range (nlohmann's out_of_range names none),
  // and the object's keys, for one given twice (nlohmann keeps the last, silently).
  std::string field = "(the line)", duplicate;
  std::set<std::string> keys;
  size_t depth = 0, element = 0;
  auto track = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start || event == E::array_start) {
      ++depth;
      element = 0;
    }
    if (event == E::object_end || event == E::array_end) --depth;
    if (event == E::key && depth == 1) {
      field = parsed.get<std::string>();
      if (!keys.insert(field).second && duplicate.empty()) duplicate = field;
    }
    if (event == E::value && depth == 2) ++element;
    return true;
  };
  try {
    j = nlohmann::json::parse(line, track);
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    const size_t colon = what.find("] ");
    throw InputError(fmt::format("{}:{}: invalid JSON ({}); each line of a Mooncake trace is one JSON object", path_,
                                 line_, colon == std::string::npos ? what : what.substr(colon + 2)));
  } catch (const nlohmann::json::out_of_range& e) {  // "number overflow parsing '1e400'"
    const std::string what = e.what();
    const size_t quote = what.find('\'');
    const std::string number = quote == std::string::npos ? "a number" : what.substr(quote);
    const std::string where = depth == 2 ? fmt::format("{}[{}]", field, element) : field;
    throw InputError(fmt::format("{}:{}: {}: {} is past a double's range; give {}", path_, line_, where, number,
                                 field == "timestamp" ? "the arrival in ms" : field == "hash_ids" ? "a block id below 2^64"
                                                                                                   : "a count of tokens"));
  }
  if (!duplicate.empty())
    throw InputError(fmt::format("{}:{}: {}: key given twice in one object; keep one", path_, line_, duplicate));
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
    if (negative(v))
      throw InputError(fmt::format("{}:{}: {}: {} is negative; a length is a count of tokens", path_, line_, key,
                                   v.get<int64_t>()));
    uint64_t n = 0;
    if (!whole(v, n))
      throw InputError(fmt::format("{}:{}: {}: {} is not a whole number of tokens", path_, line_, key, v.dump()));
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
    uint64_t id = 0;
    if (!whole(ids[i], id))
      throw InputError(fmt::format("{}:{}: hash_ids[{}]: {} is not a block id (a whole number >= 0)", path_, line_, i,
                                   ids[i].dump()));
    r.blocks.push_back(id);
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
    // "-0" is no negative count, but a sign all the same: the counts are digits only, as in a lengths CSV.
    if (!s.empty() && s[0] == '-' && s.find_first_not_of("0", 1) != std::string::npos)
      throw InputError(fmt::format("{}:{}: {}: {} is negative; a length is a count of tokens", path_, line_,
                                   kAzureNames[k], s));
    if (!s.empty() && s[0] == '-')
      throw InputError(fmt::format("{}:{}: {}: '{}' has a sign; write the count in digits alone", path_, line_,
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
      consumed != static_cast<int>(t.size()) || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 ||
      mi > 59 || sec < 0 || sec >= 61)
    throw InputError(fmt::format("{}:{}: TIMESTAMP: '{}' is not a time like 2023-11-16 18:17:03.9799600", path_, line_, t));
  if (d > static_cast<int>(days_in_month(y, static_cast<unsigned>(mo))))  // 2023-02-30 would be read as March 2nd
    throw InputError(fmt::format("{}:{}: TIMESTAMP: '{}' is no date: {:04d}-{:02d} has {} days", path_, line_, t, y, mo,
                                 days_in_month(y, static_cast<unsigned>(mo))));
  const double ms = (static_cast<double>(days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d))) * 86400.0 +
                     h * 3600.0 + mi * 60.0 + sec) * 1000.0;
  if (!first_ms_) first_ms_ = ms;
  r.arrival_ms = ms - *first_ms_;
  return r;
}

}  // namespace mlaplan::replay
