#include "mlaplan/input_file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "mlaplan/errors.hpp"

namespace mlaplan {

std::string read_input_file(const std::string& path, const std::string& what, size_t limit) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(fmt::format("{}: is a folder; give {}", path, what));
  if (!std::filesystem::exists(path, ec)) throw InputError(fmt::format("{}: no such file; give {}", path, what));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open the file ({}); check the path and give {}", path, std::strerror(errno), what));
  std::string text;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in.gcount()));
    if (text.size() > limit)
      throw InputError(fmt::format("{}: more than {} MiB, past what mlaplan reads; give {} (split a large file)", path,
                                   limit >> 20, what));
  }
  if (in.bad()) throw InputError(fmt::format("{}: cannot read the file (read error); give {}", path, what));
  return text;
}

}  // namespace mlaplan
