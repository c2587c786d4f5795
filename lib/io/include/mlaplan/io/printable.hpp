// User-supplied text (scenario names, descriptions, paths, commands) on a terminal: shown, never obeyed.
#pragma once

#include <string>

namespace mlaplan::io {

// `text` with its control characters shown escaped: \n, \r, a tab as a space, the rest (ESC, BEL,
// DEL, ...) as \xHH, and so are C1 controls (U+0080..U+009F, such as CSI: \xc2\x9b) and every byte
// that is not part of well-formed UTF-8. A name holding ESC[2J or an OSC title sequence then prints
// as text and cannot drive the terminal or forge lines. Other UTF-8 characters (é, 中) pass unchanged.
std::string printable(const std::string& text);

// printable(), clipped to `max_bytes` with the count of bytes left out: one readable line for a
// message that quotes a 10 MB name.
std::string printable_line(const std::string& text, size_t max_bytes = 4096);

}  // namespace mlaplan::io
