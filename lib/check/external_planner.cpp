#include "mlaplan/check/external_planner.hpp"

#include <fmt/format.h>

#include <charconv>

#include "mlaplan/errors.hpp"
#include "mlaplan/profile/external_process.hpp"

namespace mlaplan::check {

namespace {

std::string describe(const Batch& b) {
  return fmt::format("B={} page_size={} buffer_token_size={} max_chunks={}", b.batch_size(), b.page_size,
                     b.buffer_token_size, b.max_chunks);
}

// Reads the whitespace-separated integers after the answer's first word.
class Numbers {
 public:
  Numbers(const std::string& line, size_t from) : line_(line), at_(from) {}
  bool next(int64_t& value) {
    while (at_ < line_.size() && (line_[at_] == ' ' || line_[at_] == '\t' || line_[at_] == '\r')) ++at_;
    if (at_ >= line_.size()) return false;
    const char* begin = line_.data() + at_;
    const char* end = line_.data() + line_.size();
    const auto [ptr, ec] = std::from_chars(begin, end, value);
    if (ec != std::errc() || (ptr != end && *ptr != ' ' && *ptr != '\t' && *ptr != '\r')) {
      const size_t stop = std::min(line_.find_first_of(" \t\r", at_), line_.size());
      throw DeviceError(fmt::format("external planner: '{}' is not an integer", line_.substr(at_, std::min<size_t>(stop - at_, 40))));
    }
    at_ = static_cast<size_t>(ptr - line_.data());
    ++count_;
    return true;
  }
  size_t count() const { return count_; }

 private:
  const std::string& line_;
  size_t at_;
  size_t count_ = 0;
};

class ExternalPlanner : public profile::Planner {
 public:
  ExternalPlanner(std::string command, ExternalPlannerOptions options) : process_(std::move(command)), options_(options) {}

  std::string name() const override { return options_.policy.empty() ? "external" : "external (" + options_.policy + ")"; }
  std::string backend() const override { return "external"; }
  std::optional<std::string> device() const override { return process_.command(); }

  PlanTables plan(const Batch& batch, profile::PhaseTimer& timer) override {
    const std::string given = fmt::format("(given {})", describe(batch));
    std::string answer;
    {
      auto scope = timer.phase("plan");
      const uint64_t rows = options_.answer_rows ? options_.answer_rows(batch) : 0;
      answer = process_.ask(external_request_line(batch, options_.policy), options_.answer_timeout_seconds, given,
                            max_plan_answer_bytes(batch, rows));
    }
    try {
      return parse_external_answer(answer, batch, !options_.policy.empty());
    } catch (const InfeasibleBatch&) {
      throw;
    } catch (const DeviceError& e) {
      throw DeviceError(fmt::format("{} {}", e.what(), given));
    }
  }

 private:
  profile::ExternalProcess process_;
  ExternalPlannerOptions options_;
};

}  // namespace

std::string external_request_line(const Batch& b, const std::string& policy) {
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out), "plan {}{}{} {} {} {}", policy, policy.empty() ? "" : " ", b.page_size, b.buffer_token_size, b.max_chunks, b.batch_size());
  for (uint32_t c : b.cache_lengths) fmt::format_to(std::back_inserter(out), " {}", c);
  for (uint32_t o : b.input_row_offsets) fmt::format_to(std::back_inserter(out), " {}", o);
  out.push_back('\n');
  return fmt::to_string(out);
}

size_t max_plan_answer_bytes(const Batch& b, uint64_t rows) {
  const uint64_t B = b.batch_size(), M = rows ? rows : b.max_chunks;
  const uint64_t offsets = M * (B + 1) + M * B;  // each " " and at most 10 digits (4294967295)
  return static_cast<size_t>(6 + offsets * 11 + M * 12 + profile::ExternalProcess::kShortAnswerBytes);  // lengths: " -2147483648"
}

PlanTables parse_external_answer(const std::string& line, const Batch& b, bool any_rows) {
  const size_t space = std::min(line.find(' '), line.size());
  const std::string word = line.substr(0, space);
  if (word == "infeasible") {
    Numbers numbers(line, space);
    int64_t min = 0;
    if (numbers.next(min) && min < 0) throw DeviceError("external planner: infeasible with a negative max_chunks");
    throw InfeasibleBatch(fmt::format("max_chunks: the external planner refused the batch{}",
                                      min ? fmt::format(" (it asks for max_chunks >= {})", min) : ""),
                          static_cast<uint64_t>(min));
  }
  if (word == "error") throw DeviceError("external planner: error:" + line.substr(space));
  if (word != "tables")
    throw DeviceError(fmt::format("external planner: an answer starts with tables, infeasible or error, not '{}'",
                                  word.substr(0, 40)));
  const uint32_t B = b.batch_size();
  uint32_t M = b.max_chunks;
  std::vector<int64_t> all;  // a policy's answer: every number first, for its count says the rows
  if (any_rows) {
    Numbers counting(line, space);
    for (int64_t v = 0; counting.next(v);) all.push_back(v);
    const uint64_t per_row = 2 * uint64_t{B} + 2;  // B + 1 row offsets, B cache offsets, one length
    if (all.size() % per_row != 0 || all.size() / per_row > UINT32_MAX)
      throw DeviceError(fmt::format("external planner: tables holds {} numbers, not a whole number of chunk rows of {} "
                                    "(2 x B + 2: B + 1 buffer_row_offsets, B cache_offsets, one buffer_length each)",
                                    all.size(), per_row));
    M = static_cast<uint32_t>(all.size() / per_row);
  }
  PlanTables t(B, M);
  const size_t want = t.buffer_row_offsets.size() + t.cache_offsets.size() + t.buffer_lengths.size();
  Numbers numbers(line, space);
  size_t at = 0;
  auto next = [&](int64_t& value) { return any_rows ? (at < all.size() ? (value = all[at++], true) : false) : numbers.next(value); };
  int64_t v = 0;
  auto take = [&](auto& table, int64_t lo, int64_t hi, const char* name) {
    for (auto& cell : table) {
      if (!next(v))
        throw DeviceError(fmt::format("external planner: tables holds {} numbers; {} (M x (B+1) + M x B + M) expected",
                                      numbers.count(), want));
      if (v < lo || v > hi) throw DeviceError(fmt::format("external planner: {} value {} is out of range", name, v));
      cell = static_cast<std::remove_reference_t<decltype(cell)>>(v);
    }
  };
  take(t.buffer_row_offsets, 0, UINT32_MAX, "buffer_row_offsets");
  take(t.cache_offsets, 0, UINT32_MAX, "cache_offsets");
  take(t.buffer_lengths, INT32_MIN, INT32_MAX, "buffer_lengths");
  if (next(v))
    throw DeviceError(fmt::format("external planner: tables holds more than the {} numbers expected (M x (B+1) + M x B + M)",
                                  want));
  return t;
}

std::unique_ptr<profile::Planner> make_external_planner(const std::string& command, const ExternalPlannerOptions& options) {
  return std::make_unique<ExternalPlanner>(command, options);
}

}  // namespace mlaplan::check
