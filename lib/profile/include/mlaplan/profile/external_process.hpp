// A program in another process that answers each request line with one line: the transport of
// docs/external.md, shared by `verify --external` (plan requests) and `bench --max` (timing requests).
#pragma once

#include <cstddef>
#include <string>
#include <sys/types.h>

namespace mlaplan::profile {

class ExternalProcess {
 public:
  // Starts `command` with /bin/sh -c, its stdin and stdout on a socket and its stderr on a pipe that
  // mlaplan keeps the end of (an error then quotes the program's last words on one line, instead of
  // the program's lines interleaving with mlaplan's); throws DeviceError.
  explicit ExternalProcess(std::string command);
  // Closes its input (the program should exit), waits up to 2 s (0.2 s after a stop request), then kills it.
  ~ExternalProcess();
  ExternalProcess(const ExternalProcess&) = delete;
  ExternalProcess& operator=(const ExternalProcess&) = delete;

  const std::string& command() const { return command_; }

  // Short answers (info, loaded, elapsed, infeasible, error) fit in this many bytes.
  static constexpr size_t kShortAnswerBytes = size_t{64} << 10;

  // Sends `line` (which ends in '\n') and returns the answer line without its '\n'. Throws
  // DeviceError when the program dies, closes its output, has not sent the whole line within
  // `timeout_seconds`, or sends more than `max_answer_bytes` without ending the line (no answer to
  // the request can be longer; the program is then cut off). The message ends with `context`
  // (say, "(given B=3 ...)") and the program's last stderr line. Throws Interrupted when a stop is
  // requested (Ctrl-C) while it waits.
  std::string ask(const std::string& line, double timeout_seconds, const std::string& context,
                  size_t max_answer_bytes = kShortAnswerBytes);

 private:
  [[noreturn]] void died(const std::string& what, const std::string& context);
  void send_line(const std::string& line, const std::string& context);
  std::string read_line(double timeout_seconds, const std::string& context, size_t max_answer_bytes);
  void drain_stderr();                     // reads what the program has written to stderr, keeping the end
  std::string said() const;                // "; its stderr said: ..." or ""


  std::string command_;
  pid_t pid_ = -1;
  bool reaped_ = false;  // died() waited for it already
  int fd_ = -1;
  int err_fd_ = -1;        // the read end of the program's stderr, non-blocking
  std::string err_tail_;   // its last few KiB
  std::string buffer_;
};

}  // namespace mlaplan::profile
