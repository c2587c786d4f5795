// The ways a plan request fails, each mapped to one exit status of the CLI.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace mlaplan {

// Bad input: a malformed or out-of-range scenario (exit 2). The message names the field and the fix.
// A NUL byte in the message (from a key or CSV cell quoted in it) is written as \x00: what() is a C
// string, and everything after a raw NUL (the field, the fix) would be lost.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(without_nul(message)) {}
  explicit InputError(const char* message) : std::runtime_error(message) {}

 private:
  static std::string without_nul(const std::string& message) {
    if (message.find('\0') == std::string::npos) return message;
    std::string out;
    for (char c : message) {
      if (c == '\0') out += "\\x00";
      else out += c;
    }
    return out;
  }
};

// A valid batch that does not fit in max_chunks chunks (exit 2, like any bad input).
class InfeasibleBatch : public InputError {
 public:
  InfeasibleBatch(const std::string& message, uint64_t min_max_chunks)
      : InputError(message), min_max_chunks_(min_max_chunks) {}
  uint64_t min_max_chunks() const { return min_max_chunks_; }

 private:
  uint64_t min_max_chunks_;
};

// The device or runtime failed: no usable GPU, a CUDA error, out of memory (exit 3).
class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The caller asked the work to stop (Ctrl-C: stop_request.hpp), and it stopped before finishing
// (exit 130). Thrown by the CPU planners when their stop flag is set, and by loops that have no
// partial result worth keeping (forming a sweep's batches, say).
class Interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace mlaplan
