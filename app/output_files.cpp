#include "output_files.hpp"

#include <fcntl.h>


#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "mlaplan/errors.hpp"
#include "mlaplan/io/file_error.hpp"
#include "mlaplan/profile/stop_request.hpp"

namespace mlaplan::cli {

namespace fs = std::filesystem;

namespace {

// The message for a failed write: a fault of the device is exit 3, a problem of the path exit 2.
[[noreturn]] void fail(const std::string& path, int err, const std::string& doing = "cannot write the output file") {
  const std::string cause = io::file_error_cause(err, io::FileRole::output);
  // A missing folder keeps the wording scripts have seen: "cannot write the output file; check that its folder exists".
  const std::string message = fmt::format("{}: {}{} {}", path, doing, err == ENOENT ? ";" : ":", cause);
  if (io::is_io_fault(err)) throw DeviceError(message);
  throw InputError(message);
}

// `path` with every symlink on its last component followed (the folders' links the kernel follows
// itself), so the write lands on the link's target and the link stays. A loop is ELOOP. Sets
// `via_proc` for a link into /proc (/dev/stdout -> /proc/self/fd/1): its text names no file.
std::string follow_links(const std::string& path, const std::string& shown, bool* via_proc) {
  fs::path p(path);
  for (int hops = 0;; ++hops) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) {
      if (errno == ENOENT) return p.string();  // a new file (or a dangling link's future target)
      fail(shown, errno);
    }
    if (!S_ISLNK(st.st_mode)) return p.string();
    if (hops == 40) fail(shown, ELOOP);  // the kernel's own limit
    std::error_code ec;
    const fs::path link = fs::read_symlink(p, ec);
    if (ec) fail(shown, ec.value());
    if (link.string().rfind("/proc/", 0) == 0) *via_proc = true;
    p = link.is_absolute() ? link : p.parent_path() / link;
  }
}

std::string normal_form(const std::string& path) {
  std::error_code ec;
  fs::path abs = fs::absolute(path, ec);
  if (ec) abs = path;
  fs::path normal = fs::weakly_canonical(abs, ec);
  if (ec) normal = abs.lexically_normal();
  return normal.string();
}

// Writes all of `content` to `fd`; false with errno set on failure. A FIFO whose reader stalls
// blocks here: Ctrl-C ends the wait (EINTR, then the stop request).
bool write_all(int fd, const std::string& content) {
  const char* p = content.data();
  size_t left = content.size();
  while (left) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR && profile::stop_requested()) throw Interrupted("interrupted while writing the outputs");
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

// A temporary beside `target`, named after it (".NAME.tmpPID", shortened so that it fits where the
// name itself fits), created exclusively; returns its path and the descriptor in `fd`.
std::string make_temp(const std::string& target, const std::string& shown, int* fd) {
  const fs::path t(target);
  const fs::path dir = t.parent_path().empty() ? fs::path(".") : t.parent_path();
  std::string name = t.filename().string();
  // The target's own name must fit too: the temporary, shortened, would not tell.
  const long name_max = ::pathconf(dir.c_str(), _PC_NAME_MAX);
  if (name_max > 0 && name.size() > static_cast<size_t>(name_max)) fail(shown, ENAMETOOLONG);
  if (name.size() > 200) name.resize(200);
  for (int attempt = 0;; ++attempt) {
    const std::string temp =
        (dir / fmt::format(".{}.tmp{}{}", name, ::getpid(), attempt ? fmt::format(".{}", attempt) : "")).string();
    *fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (*fd >= 0) return temp;
    if (errno != EEXIST || attempt == 100) fail(shown, errno);
  }
}

}  // namespace

namespace {

struct Known {
  bool exists = false, directory = false, regular = false;
  dev_t dev = 0;
  ino_t ino = 0;
};

Known stat_of(const std::string& path) {
  Known k;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return k;
  k.exists = true;
  k.directory = S_ISDIR(st.st_mode);
  k.regular = S_ISREG(st.st_mode);
  k.dev = st.st_dev;
  k.ino = st.st_ino;
  return k;
}

}  // namespace

void OutputSet::claim_input(const std::string& path, const std::string& what) {
  if (path.empty() || path == "-") return;
  const Known k = stat_of(path);
  if (!k.exists) return;
  Input in{path, what, {true, !k.regular, k.dev, k.ino, normal_form(path)}};
  for (const Output& o : outputs_) {
    if (in.id.shared || o.id.shared) continue;
    if ((o.id.exists && o.id.dev == in.id.dev && o.id.ino == in.id.ino) || o.id.normal == in.id.normal)
      throw InputError(fmt::format("{} {}: is also {} ({}); writing it would destroy the input; choose another output path",
                                   o.option, o.path, what, path));
  }
  inputs_.push_back(std::move(in));
}

void OutputSet::claim_output(const std::string& path, const std::string& option) {
  // Stdout takes one output: "-", or -o left out (its default). Two would come out interleaved, as
  // two outputs into one file would; /dev/stdout stays a device written into at commit.
  if (path == "-" || (path.empty() && option == "-o")) {
    if (!stdout_option_.empty() && stdout_option_ != option)
      throw InputError(fmt::format("{} {}: stdout already takes the output of {}{}; give one of them a file name", option,
                                   path.empty() ? "''" : path, stdout_option_,
                                   stdout_default_ ? " (stdout when -o is not given)" : ""));
    stdout_option_ = option;
    stdout_default_ = path.empty();
    return;
  }
  if (path.empty()) return;
  Output o;
  o.path = path;
  o.option = option;
  const Known direct = stat_of(path);  // through every link, /proc's included
  if (direct.directory) throw InputError(fmt::format("{}: is a folder; give a file name", path));
  bool via_proc = false;
  o.target = direct.exists && !direct.regular ? path : follow_links(path, path, &via_proc);
  if (via_proc) o.target = path;  // /dev/stdout and its kind: written into, like a device
  const Known k = stat_of(o.target);
  if (k.directory) throw InputError(fmt::format("{}: is a folder; give a file name", path));
  o.special = (k.exists && !k.regular) || via_proc;
  o.id = {k.exists, o.special, k.dev, k.ino, normal_form(o.target)};
  auto same = [&o](const Identity& id) {
    if (o.id.shared || id.shared) return false;  // /dev/null, a FIFO: any number of outputs, each written in
    return (o.id.exists && id.exists && o.id.dev == id.dev && o.id.ino == id.ino) || o.id.normal == id.normal;
  };
  for (const Input& in : inputs_)
    if (same(in.id))
      throw InputError(fmt::format("{} {}: is also {} ({}); writing it would destroy the input; choose another output path",
                                   option, path, in.what, in.path));
  for (const Output& other : outputs_)
    if (same(other.id))
      throw InputError(fmt::format("{} {}: is also the file of {} ({}); one would overwrite the other; give each output its own path",
                                   option, path, other.option, other.path));
  if (!o.special) {  // the folder must take a new file now, not after the work
    int fd = -1;
    const std::string probe = make_temp(o.target, path, &fd);
    ::close(fd);
    ::unlink(probe.c_str());
  }
  outputs_.push_back(std::move(o));
}

OutputSet::Output& OutputSet::find_or_claim(const std::string& path) {
  // One path may be claimed by several options only where it is shared (/dev/stdout for -o and
  // --svg): each write then takes the next claim not yet written.
  Output* last = nullptr;
  for (Output& o : outputs_) {
    if (o.path != path) continue;
    if (!o.staged) return o;
    last = &o;
  }
  if (last) return *last;
  claim_output(path, "output");
  return outputs_.back();
}

void OutputSet::stage(const std::string& path, const std::string& content) {
  Output& o = find_or_claim(path);
  o.staged = true;
  if (o.special) {
    o.content = content;
    return;
  }
  if (!o.temp.empty()) ::unlink(o.temp.c_str());  // staged again: the last content wins
  int fd = -1;
  o.temp = make_temp(o.target, path, &fd);
  struct stat old {};
  if (::stat(o.target.c_str(), &old) == 0) ::fchmod(fd, old.st_mode & 07777);  // a replaced file keeps its mode
  const bool written = write_all(fd, content);
  const int write_err = errno;
  if (::close(fd) != 0 && written) fail(path, errno, "writing the output file failed");  // NFS reports late
  if (!written) fail(path, write_err, "writing the output file failed");
}

void OutputSet::commit() {
  // The devices first (a write into /dev/full fails here), while nothing has been renamed yet.
  for (Output& o : outputs_) {
    if (!o.staged || !o.special) continue;
    // O_APPEND: /dev/stdout onto a file adds after what stdout wrote, never over it.
    int fd = -1;
    // A FIFO without a reader blocks the open: Ctrl-C ends the wait.
    while ((fd = ::open(o.target.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC)) < 0 && errno == EINTR)
      if (profile::stop_requested()) throw Interrupted(fmt::format("interrupted while waiting for a reader of {}", o.path));
    if (fd < 0) fail(o.path, errno);
    struct FdCloser {  // closed on the Interrupted path too
      int fd;
      ~FdCloser() {
        if (fd >= 0) ::close(fd);
      }
    } closer{fd};
    const bool written = write_all(fd, o.content);
    const int write_err = errno;
    closer.fd = -1;
    const bool closed = ::close(fd) == 0;
    if (!written) fail(o.path, write_err, "writing the output failed");
    if (!closed) fail(o.path, errno, "writing the output failed");
    o.content.clear();
  }
  if (profile::stop_requested()) throw Interrupted("interrupted");
  // A signal now would stop half-way through the renames: it waits until they are done.
  sigset_t stop, previous;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  sigprocmask(SIG_BLOCK, &stop, &previous);
  struct Unblock {
    sigset_t* previous;
    ~Unblock() { sigprocmask(SIG_SETMASK, previous, nullptr); }
  } unblock{&previous};
  for (Output& o : outputs_) {
    if (o.temp.empty()) continue;
    if (::rename(o.temp.c_str(), o.target.c_str()) != 0) fail(o.path, errno, "cannot replace the output file");
    o.temp.clear();
  }
  inputs_.clear();
  outputs_.clear();
  stdout_option_.clear();
  stdout_default_ = false;
}

void OutputSet::discard() noexcept {
  for (Output& o : outputs_)
    if (!o.temp.empty()) ::unlink(o.temp.c_str());
  inputs_.clear();
  outputs_.clear();
  stdout_option_.clear();
  stdout_default_ = false;
}

OutputSet& outputs() {
  static OutputSet set;
  return set;
}

void require_output_folder(const std::string& dir, const std::string& option) {
  std::error_code ec;
  fs::path p = dir;
  while (true) {  // from the path up to the nearest part that exists
    const fs::file_status st = fs::status(p, ec);
    if (fs::exists(st)) {
      if (fs::is_directory(st)) return;
      throw InputError(fmt::format("{} {}: {} not a folder; give a folder (it is made if missing)", option, dir,
                                   p == fs::path(dir) ? std::string("it is") : p.string() + " is"));
    }
    if (st.type() != fs::file_type::not_found && ec)  // a permission, a loop: not "missing"
      throw InputError(fmt::format("{} {}: cannot use it: {}; give a folder (it is made if missing)", option, dir,
                                   io::file_error_cause(ec.value(), io::FileRole::output)));
    const fs::path parent = p.parent_path();
    if (parent.empty() || parent == p) return;  // nothing of it exists yet: made when needed
    p = parent;
  }
}

void write_file_now(const std::string& path, const std::string& content, const std::string& option) {
  OutputSet one;
  one.claim_output(path, option);
  one.stage(path, content);
  one.commit();
}

namespace {
int g_stdout_errno = 0;  // why a write of write_stdout failed, when stdio's flag alone remains
}

void write_stdout(const std::string& content) {
  errno = 0;
  if (std::fwrite(content.data(), 1, content.size(), stdout) < content.size()) g_stdout_errno = errno;
  check_stdout();
}

std::string stdout_problem() {
  std::cout.flush();  // CLI11 and anything else that prints through iostreams (synced with stdio)
  errno = 0;
  if (std::fflush(stdout) == 0 && !std::ferror(stdout) && std::cout) return "";
  int err = errno ? errno : g_stdout_errno;
  // A write that failed earlier (inside fmt::print, say) left only the error flag: tell the cause
  // from what stdout is. A closed one is the guard's read-only stand-in; a full one a device or
  // file system with no space left.
  const int flags = ::fcntl(STDOUT_FILENO, F_GETFL);
  struct stat st {};
  struct statvfs vfs {};
  if (flags != -1 && (flags & O_ACCMODE) == O_RDONLY) {
    err = EBADF;
  } else if (!err && ::fstat(STDOUT_FILENO, &st) == 0) {
    if (S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 && minor(st.st_rdev) == 7) err = ENOSPC;  // /dev/full
    else if (S_ISREG(st.st_mode) && ::fstatvfs(STDOUT_FILENO, &vfs) == 0 && vfs.f_bavail == 0) err = ENOSPC;
    else if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) err = EPIPE;  // the reader went away (| head)
  }
  const std::string cause =
      err ? io::file_error_cause(err, io::FileRole::output) : std::string("some of it was not written (a full disk, an I/O error?)");
  return fmt::format("stdout: writing the output failed: {}{}", cause, err == EBADF ? "" : "; or give -o FILE");
}

void check_stdout() {
  const std::string problem = stdout_problem();
  if (!problem.empty()) throw DeviceError(problem);
}

void guard_standard_streams() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    const int null = ::open("/dev/null", O_RDONLY);  // the lowest free descriptor: this one
    if (null >= 0 && null != fd) {
      ::dup2(null, fd);
      ::close(null);
    }
  }
}

}  // namespace mlaplan::cli
