#include "mlaplan/io/input_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "mlaplan/errors.hpp"
#include "mlaplan/io/file_error.hpp"
#include "mlaplan/profile/stop_request.hpp"

namespace mlaplan::io {

namespace {

// Closes the descriptor on every way out, a throw included.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_input_file(const std::string& path, const std::string& what, size_t limit) {
  // open(2) itself, not a stream: its errno says why (a permission, a loop, a name too long), where
  // exists() would have called all of them "no such file".
  // A FIFO with no writer blocks the open, a pipe that never ends the read: Ctrl-C (EINTR, then the
  // stop request) ends either wait.
  Fd in{-1};
  while ((in.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC)) < 0 && errno == EINTR)
    if (profile::stop_requested()) throw Interrupted(fmt::format("interrupted while opening {}", path));
  if (in.fd < 0) {
    const int err = errno;
    if (err == ENOENT) throw InputError(fmt::format("{}: no such file; give {}", path, what));
    if (err == EISDIR) throw InputError(fmt::format("{}: is a folder; give {}", path, what));
    throw InputError(fmt::format("{}: cannot open the file: {}; give {}", path, file_error_cause(err, FileRole::input), what));
  }
  struct stat st {};
  if (::fstat(in.fd, &st) == 0 && S_ISDIR(st.st_mode)) throw InputError(fmt::format("{}: is a folder; give {}", path, what));
  std::string text;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(in.fd, chunk, sizeof chunk);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR && profile::stop_requested()) throw Interrupted(fmt::format("interrupted while reading {}", path));
      if (errno == EINTR) continue;
      const int err = errno;
      throw InputError(fmt::format("{}: cannot read the file: {}; give {}", path, file_error_cause(err, FileRole::input), what));
    }
    text.append(chunk, static_cast<size_t>(n));
    if (text.size() > limit)
      throw InputError(fmt::format("{}: more than {} MiB, past what mlaplan reads; give {} (split a large file)", path,
                                   limit >> 20, what));
  }
  return text;
}

}  // namespace mlaplan::io
