#include "mlaplan/io/file_error.hpp"

#include <cerrno>
#include <cstring>

namespace mlaplan::io {

std::string file_error_cause(int err, FileRole role) {
  const bool out = role == FileRole::output;
  switch (err) {
    case ENOENT:
      return out ? "check that its folder exists" : "no such file";
    case EACCES:
    case EPERM:
      return out ? "permission denied; check that you may write in its folder (ls -ld)"
                 : "permission denied; check the permissions of the file and of its folders (ls -ld)";
    case ENAMETOOLONG:
      return "the name is too long (the system allows 255 bytes per name, 4096 per path); shorten it";
    case ELOOP:
      return "too many levels of symbolic links (a symlink loop?); fix the link";
    case ENOTDIR:
      return "a part of the path is a file, not a folder; check the path";
    case EISDIR:
      return out ? "is a folder; give a file name" : "is a folder; give a file";
    case EROFS:
      return "the file system is read-only; choose a path on a writable one";
    case ENOSPC:
      return "no space left on the device; free some space or write elsewhere";
    case EDQUOT:
      return "disk quota exceeded; free some space or write elsewhere";
    case EFBIG:
      return "the file is too large for the file system; write elsewhere";
    case EIO:
      return "input/output error on the device; check the disk or write elsewhere";
    case EBADF:
      return out ? "the stream is closed (bad file descriptor); do not close it (>&-), or give a file"
                 : "bad file descriptor";
    case EPIPE:
      return "broken pipe: the reader went away";
    case ENXIO:
    case ENODEV:
      return "no such device; check the path";
    case ETXTBSY:
      return "the file is busy (a running program); choose another path";
    case EMFILE:
    case ENFILE:
      return "too many open files; close some or raise the limit (ulimit -n)";
    default:
      return std::strerror(err);
  }
}

bool is_io_fault(int err) {
  switch (err) {
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
    case EIO:
    case EBADF:
    case EPIPE:
    case ENXIO:
    case EMFILE:
    case ENFILE:
      return true;
    default:
      return false;
  }
}

}  // namespace mlaplan::io
