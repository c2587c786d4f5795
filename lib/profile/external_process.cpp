#include "mlaplan/profile/external_process.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "mlaplan/errors.hpp"
#include "mlaplan/profile/stop_request.hpp"

extern char** environ;

namespace mlaplan::profile {

ExternalProcess::ExternalProcess(std::string command) : command_(std::move(command)) {
  // A socket rather than pipes: send(MSG_NOSIGNAL) reports a program that died as an error instead
  // of killing mlaplan with SIGPIPE, without touching the process's signal handlers.
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    throw DeviceError(fmt::format("external planner: socketpair: {}", std::strerror(errno)));
  int err[2];
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw DeviceError(fmt::format("external planner: pipe: {}", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  const char* argv[] = {"/bin/sh", "-c", command_.c_str(), nullptr};
  const int rc = ::posix_spawn(&pid_, "/bin/sh", &actions, nullptr, const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  ::close(err[1]);
  if (rc != 0) {
    ::close(fds[0]);
    ::close(err[0]);
    throw DeviceError(fmt::format("external planner: cannot start /bin/sh -c '{}': {}", command_, std::strerror(rc)));
  }
  fd_ = fds[0];
  err_fd_ = err[0];
  ::fcntl(err_fd_, F_SETFL, ::fcntl(err_fd_, F_GETFL) | O_NONBLOCK);
}

void ExternalProcess::drain_stderr() {
  constexpr size_t kKeep = 4096;  // enough for the last line or two; a chatty program cannot grow it
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::read(err_fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // EAGAIN (nothing more now) or EOF
    err_tail_.append(chunk, static_cast<size_t>(n));
    if (err_tail_.size() > 2 * kKeep) err_tail_.erase(0, err_tail_.size() - kKeep);
  }
}

std::string ExternalProcess::said() const {
  std::string tail = err_tail_;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r' || tail.back() == ' ')) tail.pop_back();
  if (tail.empty()) return "";
  const size_t start = tail.find_last_of('\n');
  std::string last = start == std::string::npos ? tail : tail.substr(start + 1);
  if (last.size() > 300) last = last.substr(0, 300) + "...";
  return "; its stderr said: " + last;
}

ExternalProcess::~ExternalProcess() {
  ::shutdown(fd_, SHUT_WR);  // end of requests: the program's stdin reaches EOF and it exits
  if (reaped_) {
    ::close(fd_);
    ::close(err_fd_);
    return;
  }
  // After Ctrl-C mlaplan must end within a second, so the program gets only a moment to exit.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(stop_requested() ? 200 : 2000);
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
  ::close(err_fd_);
}

std::string ExternalProcess::ask(const std::string& line, double timeout_seconds, const std::string& context,
                                 size_t max_answer_bytes) {
  send_line(line, context);
  return read_line(timeout_seconds, context, max_answer_bytes);
}

void ExternalProcess::died(const std::string& what, const std::string& context) {
  // Its output closed, so it is most likely exiting: give it a moment to be reaped, so the message
  // can say how it ended.
  int status = 0;
  std::string how = "closed its output";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  pid_t reaped = 0;
  while ((reaped = ::waitpid(pid_, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline) ::usleep(1000);
  drain_stderr();
  if (reaped == pid_) {
    reaped_ = true;
    how = WIFEXITED(status) ? fmt::format("exited with status {}", WEXITSTATUS(status))
                            : fmt::format("was killed by signal {}", WTERMSIG(status));
  }
  throw DeviceError(fmt::format("external planner '{}' {} {} {}{}", command_, how, what, context, said()));
}

void ExternalProcess::send_line(const std::string& line, const std::string& context) {
  size_t sent = 0;
  while (sent < line.size()) {
    const ssize_t n = ::send(fd_, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) died("before reading the request", context);
    sent += static_cast<size_t>(n);
  }
}

std::string ExternalProcess::read_line(double timeout_seconds, const std::string& context, size_t max_answer_bytes) {
  // One deadline for the whole answer, however it arrives (a byte at a time included).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  size_t scanned = 0;  // bytes of buffer_ known to hold no '\n': each byte is searched once
  for (;;) {
    const size_t newline = buffer_.find('\n', scanned);
    if (newline != std::string::npos && newline <= max_answer_bytes) {
      std::string line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      return line;
    }
    scanned = buffer_.size();
    if (newline != std::string::npos || buffer_.size() > max_answer_bytes) {
      // No answer to this request can be this long: stop reading now rather than after gigabytes.
      // Shutting the socket makes the program's next write fail, so it ends instead of blocking.
      ::shutdown(fd_, SHUT_RDWR);
      throw DeviceError(fmt::format("external planner '{}' sent an answer line of more than {} bytes, the most an answer "
                                    "to this request can take; it must answer each request with one line ending in "
                                    "a newline (docs/external.md, Line limits) {}{}",
                                    command_, max_answer_bytes, context, said()));
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      drain_stderr();
      throw DeviceError(
          fmt::format("external planner '{}' did not answer within {} s {}{}", command_, timeout_seconds, context, said()));
    }
    if (stop_requested()) throw Interrupted("interrupted while waiting for the external planner's answer");
    // Its stderr is read while waiting, so a program that logs much never blocks on a full pipe.
    pollfd p[2] = {{fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    const int ready = ::poll(p, 2, static_cast<int>(std::min<long long>(left.count(), 100)));
    if (ready < 0 && errno != EINTR) died("(poll failed)", context);
    if (ready > 0 && (p[1].revents & (POLLIN | POLLHUP))) drain_stderr();
    if (ready <= 0 || !(p[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    char chunk[65536];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) died(buffer_.empty() ? "before answering" : "in the middle of an answer", context);
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

}  // namespace mlaplan::profile
