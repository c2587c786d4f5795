// Why a file could not be opened, read or written, told from errno with what to do about it, so a
// permission error, a name too long or a symlink loop is not reported as a missing folder.
#pragma once

#include <string>

namespace mlaplan::io {

enum class FileRole { input, output };

// "permission denied; check the permissions of the file and of its folders (ls -ld)", and so on:
// the cause and the fix, without the path. `role` picks the advice where it differs (a missing
// input is "no such file", a missing output's folder is to be created).
std::string file_error_cause(int err, FileRole role);

// True for a fault of the device rather than of the path: no space, a quota, an I/O error, a
// closed or broken stream. The CLI maps these to exit 3 and path problems to exit 2.
bool is_io_fault(int err);

}  // namespace mlaplan::io
