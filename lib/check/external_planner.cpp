#include "mlaplan/external_planner.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>

#include "mlaplan/errors.hpp"

extern char** environ;

namespace mlaplan {

namespace {

constexpr size_t kMaxAnswerBytes = size_t{1} << 30;  // a planner that never ends its line is stopped here

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

class ExternalPlanner : public Planner {
 public:
  ExternalPlanner(std::string command, ExternalPlannerOptions options)
      : command_(std::move(command)), options_(options) {
    // A socket rather than pipes: send(MSG_NOSIGNAL) reports a planner that died as an error instead
    // of killing mlaplan with SIGPIPE, without touching the process's signal handlers.
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
      throw DeviceError(fmt::format("external planner: socketpair: {}", std::strerror(errno)));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 0);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    const char* argv[] = {"/bin/sh", "-c", command_.c_str(), nullptr};
    const int rc = ::posix_spawn(&pid_, "/bin/sh", &actions, nullptr, const_cast<char* const*>(argv), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    if (rc != 0) {
      ::close(fds[0]);
      throw DeviceError(fmt::format("external planner: cannot start /bin/sh -c '{}': {}", command_, std::strerror(rc)));
    }
    fd_ = fds[0];
  }

  ~ExternalPlanner() override {
    ::shutdown(fd_, SHUT_WR);  // end of requests: the planner's stdin reaches EOF and it exits
    if (reaped_) {
      ::close(fd_);
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      ::usleep(2000);
    }
    ::close(fd_);
  }

  std::string name() const override { return "external"; }
  std::string backend() const override { return "external"; }
  std::optional<std::string> device() const override { return command_; }

  PlanTables plan(const Batch& batch, PhaseTimer& timer) override {
    std::string answer;
    {
      auto scope = timer.phase("plan");
      send_line(external_request_line(batch), batch);
      answer = read_line(batch);
    }
    try {
      return parse_external_answer(answer, batch);
    } catch (const InfeasibleBatch&) {
      throw;
    } catch (const DeviceError& e) {
      throw DeviceError(fmt::format("{} (given {})", e.what(), describe(batch)));
    }
  }

 private:
  [[noreturn]] void died(const Batch& batch, const std::string& what) {
    // Its output closed, so it is most likely exiting: give it a moment to be reaped, so the message
    // can say how it ended.
    int status = 0;
    std::string how = "closed its output";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    pid_t reaped = 0;
    while ((reaped = ::waitpid(pid_, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline) ::usleep(1000);
    if (reaped == pid_) {
      reaped_ = true;
      how = WIFEXITED(status) ? fmt::format("exited with status {}", WEXITSTATUS(status))
                              : fmt::format("was killed by signal {}", WTERMSIG(status));
    }
    throw DeviceError(fmt::format("external planner '{}' {} {} (given {})", command_, how, what, describe(batch)));
  }

  void send_line(const std::string& line, const Batch& batch) {
    size_t sent = 0;
    while (sent < line.size()) {
      const ssize_t n = ::send(fd_, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) died(batch, "before reading the request");
      sent += static_cast<size_t>(n);
    }
  }

  std::string read_line(const Batch& batch) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.answer_timeout_seconds);
    for (;;) {
      const size_t newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        std::string line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        return line;
      }
      if (buffer_.size() > kMaxAnswerBytes) died(batch, "with an answer line over 1 GiB");
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0)
        throw DeviceError(fmt::format("external planner '{}' did not answer within {} s (given {})", command_,
                                      options_.answer_timeout_seconds, describe(batch)));
      pollfd p{fd_, POLLIN, 0};
      const int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
      if (ready < 0 && errno != EINTR) died(batch, "(poll failed)");
      if (ready <= 0) continue;
      char chunk[65536];
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) died(batch, buffer_.empty() ? "before answering" : "in the middle of an answer");
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }

  std::string command_;
  ExternalPlannerOptions options_;
  pid_t pid_ = -1;
  bool reaped_ = false;  // died() waited for it already
  int fd_ = -1;
  std::string buffer_;
};

}  // namespace

std::string external_request_line(const Batch& b) {
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out), "plan {} {} {} {}", b.page_size, b.buffer_token_size, b.max_chunks, b.batch_size());
  for (uint32_t c : b.cache_lengths) fmt::format_to(std::back_inserter(out), " {}", c);
  for (uint32_t o : b.input_row_offsets) fmt::format_to(std::back_inserter(out), " {}", o);
  out.push_back('\n');
  return fmt::to_string(out);
}

PlanTables parse_external_answer(const std::string& line, const Batch& b) {
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
  const uint32_t B = b.batch_size(), M = b.max_chunks;
  PlanTables t(B, M);
  const size_t want = t.buffer_row_offsets.size() + t.cache_offsets.size() + t.buffer_lengths.size();
  Numbers numbers(line, space);
  int64_t v = 0;
  auto take = [&](auto& table, int64_t lo, int64_t hi, const char* name) {
    for (auto& cell : table) {
      if (!numbers.next(v))
        throw DeviceError(fmt::format("external planner: tables holds {} numbers; {} (M x (B+1) + M x B + M) expected",
                                      numbers.count(), want));
      if (v < lo || v > hi) throw DeviceError(fmt::format("external planner: {} value {} is out of range", name, v));
      cell = static_cast<std::remove_reference_t<decltype(cell)>>(v);
    }
  };
  take(t.buffer_row_offsets, 0, UINT32_MAX, "buffer_row_offsets");
  take(t.cache_offsets, 0, UINT32_MAX, "cache_offsets");
  take(t.buffer_lengths, INT32_MIN, INT32_MAX, "buffer_lengths");
  if (numbers.next(v))
    throw DeviceError(fmt::format("external planner: tables holds more than the {} numbers expected (M x (B+1) + M x B + M)",
                                  want));
  return t;
}

std::unique_ptr<Planner> make_external_planner(const std::string& command, const ExternalPlannerOptions& options) {
  return std::make_unique<ExternalPlanner>(command, options);
}

}  // namespace mlaplan
