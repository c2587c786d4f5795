// A program in another process that answers each request line with one line: the transport of
// docs/external.md, shared by `verify --external` (plan requests) and `bench --max` (timing requests).
#pragma once

#include <cstddef>
#include <string>
#include <sys/types.h>

namespace mlaplan {

class ExternalProcess {
 public:
  // Starts `command` with /bin/sh -c, its stdin and stdout on a socket; throws DeviceError.
  explicit ExternalProcess(std::string command);
  // Closes its input (the program should exit), waits up to 2 s, then kills it.
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
  // (say, "(given B=3 ...)").
  std::string ask(const std::string& line, double timeout_seconds, const std::string& context,
                  size_t max_answer_bytes = kShortAnswerBytes);

 private:
  [[noreturn]] void died(const std::string& what, const std::string& context);
  void send_line(const std::string& line, const std::string& context);
  std::string read_line(double timeout_seconds, const std::string& context, size_t max_answer_bytes);

  std::string command_;
  pid_t pid_ = -1;
  bool reaped_ = false;  // died() waited for it already
  int fd_ = -1;
  std::string buffer_;
};

}  // namespace mlaplan
