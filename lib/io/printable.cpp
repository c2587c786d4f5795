#include "mlaplan/io/printable.hpp"

#include <fmt/format.h>

namespace mlaplan::io {

namespace {

// Length of the well-formed UTF-8 sequence at text[i] (RFC 3629: no overlong forms, no surrogates,
// nothing past U+10FFFF), or 0 where the byte starts none.
size_t utf8_length(const std::string& text, size_t i) {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = at(i);
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // range of the second byte
  if (c >= 0xc2 && c <= 0xdf) n = 2;
  else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + n > text.size() || at(i + 1) < lo || at(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if ((at(i + k) & 0xc0) != 0x80) return 0;
  return n;
}

}  // namespace

std::string printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c == '\n') out += "\\n";
      else if (c == '\r') out += "\\r";
      else if (c == '\t') out += ' ';
      else if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
      else out += static_cast<char>(c);
      ++i;
      continue;
    }
    const size_t n = utf8_length(text, i);
    // C1 controls (U+0080..U+009F, bytes C2 80..C2 9F) include CSI, which a terminal obeys like ESC [;
    // a byte outside well-formed UTF-8 (a Latin-1 name, a UTF-16 file) would show as garbage or
    // complete a sequence with what follows.
    if (n == 0 || (c == 0xc2 && static_cast<unsigned char>(text[i + 1]) < 0xa0)) {
      for (size_t k = 0; k < (n ? n : 1); ++k) out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[i + k]));
      i += n ? n : 1;
      continue;
    }
    out.append(text, i, n);
    i += n;
  }
  return out;
}

std::string printable_line(const std::string& text, size_t max_bytes) {
  std::string out = printable(text);
  if (out.size() > max_bytes) {
    size_t cut = max_bytes;  // not inside a multi-byte character, which would leave half of it
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xc0) == 0x80) --cut;
    out = fmt::format("{}... ({} more bytes)", out.substr(0, cut), out.size() - cut);
  }
  return out;
}

}  // namespace mlaplan::io
