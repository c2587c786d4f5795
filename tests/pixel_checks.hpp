// Checking pictures pixel by pixel, for the pixel tests (render_pixels_test.cpp): the colours
// expected, PNG files decoded with libpng, scratch folders, the renderers (rsvg-convert here, headless
// Chromium in the tests), and the checks of a rendered plan against where bar_box says its parts are.
#pragma once

#include <gtest/gtest.h>
#include <png.h>

#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "mlaplan/render/plan_picture.hpp"
#include "mlaplan/render/plan_svg.hpp"

namespace mlaplan::render::pixels {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Colours. The expected colours are written out here, not read from palette.hpp, so that a changed
// palette shows up as a failure (Paul Tol's "muted" scheme, in the order of palette.hpp).

struct Rgb {
  int r = 0, g = 0, b = 0;
};

inline Rgb hex(std::string_view h) {
  auto byte = [&](size_t at) { return std::stoi(std::string(h.substr(at, 2)), nullptr, 16); };
  return {byte(1), byte(3), byte(5)};
}

inline std::string show(Rgb c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "#%02X%02X%02X", c.r, c.g, c.b);
  return buf;
}

inline bool near(Rgb a, Rgb b, int tolerance = 3) {
  return std::abs(a.r - b.r) <= tolerance && std::abs(a.g - b.g) <= tolerance && std::abs(a.b - b.b) <= tolerance;
}

inline constexpr std::string_view kTolMuted[] = {"#CC6677", "#332288", "#DDCC77", "#117733", "#88CCEE",
                                          "#882255", "#44AA99", "#999933", "#AA4499"};
inline Rgb swatch(uint32_t sequence) { return hex(kTolMuted[sequence % std::size(kTolMuted)]); }
inline const Rgb kGrey = hex("#DDDDDD");
inline const Rgb kWhite = hex("#FFFFFF");
inline const Rgb kBlack = hex("#000000");

// ---------------------------------------------------------------------------------------------
// PNG files, decoded with libpng's simplified API into RGBA and composited on white.

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgba;

  bool inside(int x, int y) const { return x >= 0 && y >= 0 && x < width && y < height; }
  Rgb at(int x, int y) const {
    if (!inside(x, y)) return {-1000, -1000, -1000};  // matches nothing
    const uint8_t* p = &rgba[(static_cast<size_t>(y) * width + x) * 4];
    auto over_white = [&](int c) { return (c * p[3] + 255 * (255 - p[3]) + 127) / 255; };
    return {over_white(p[0]), over_white(p[1]), over_white(p[2])};
  }
};

inline std::optional<Image> read_png(const fs::path& file, std::string& error) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, file.c_str())) {
    error = file.string() + ": " + image.message;
    return std::nullopt;
  }
  image.format = PNG_FORMAT_RGBA;
  Image out;
  out.width = static_cast<int>(image.width);
  out.height = static_cast<int>(image.height);
  out.rgba.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, out.rgba.data(), 0, nullptr)) {
    error = file.string() + ": " + image.message;
    png_image_free(&image);
    return std::nullopt;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Scratch files and renderers.

class TempDir {
 public:
  TempDir() {
    char name[] = "/tmp/mlaplan_pixels_XXXXXX";
    if (::mkdtemp(name) != nullptr) path_ = name;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

inline std::string shell_quote(const fs::path& p) { return "'" + p.string() + "'"; }

inline void write_file(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// The first of `names` on PATH, or "".
inline std::string find_tool(const std::vector<std::string>& names) {
  for (const std::string& name : names)
    if (std::system(("command -v " + name + " >/dev/null 2>&1").c_str()) == 0) return name;
  return "";
}

inline bool renderers_required() {
  const char* v = std::getenv("MLAPLAN_REQUIRE_TOOLS");
  return v != nullptr && *v != '\0';
}

// Skips the test (or fails it under MLAPLAN_REQUIRE_TOOLS) when a renderer is missing.
#define MISSING_RENDERER(tool, package)                                                                      \
  do {                                                                                                       \
    const std::string why_ = std::string(tool) + " is not installed, so the pictures cannot be rendered; " \
                             "install it with scripts/install-deps.sh (Debian package " package ")";        \
    if (renderers_required()) FAIL() << why_ << " [MLAPLAN_REQUIRE_TOOLS is set]";                       \
    GTEST_SKIP() << why_;                                                                                    \
  } while (0)

// Rasterises an SVG file at its own size (1 px per SVG px).
inline std::optional<Image> rasterise(const fs::path& svg, std::string& error) {
  const fs::path png = fs::path(svg).replace_extension(".png");
  const std::string command = "rsvg-convert " + shell_quote(svg) + " -o " + shell_quote(png) + " 2>&1";
  if (std::system(command.c_str()) != 0) {
    error = "rsvg-convert failed on " + svg.string();
    return std::nullopt;
  }
  return read_png(png, error);
}

// ---------------------------------------------------------------------------------------------
// The checks. A picture's origin is where its (0, 0) lies in the image.

struct Origin {
  int x = 0, y = 0;
};

// Finds a picture in a screenshot by its first pixel of sequence 0's exact colour, in reading order:
// the top-left pixel of the first bar's first segment inside its 0.75 px white edge, at (x + 1, y + 1)
// of bar_box.
inline std::optional<Origin> locate(const Image& img, const std::vector<PlanPicture>& panels) {
  const Rgb target = swatch(0);
  const BarBox box = bar_box(panels, 0, 0);
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x)
      if (near(img.at(x, y), target, 0))
        return Origin{x - static_cast<int>(std::floor(box.x)) - 1, y - static_cast<int>(std::floor(box.y)) - 1};
  return std::nullopt;
}

struct Checked {
  size_t segments = 0, paddings = 0, unused = 0, free_parts = 0, buffer_ends = 0;
  std::vector<std::string> problems;
};

// Checks panel `panel` of a picture drawn from `panels` against the image.
inline void check_panel(const Image& img, const std::vector<PlanPicture>& panels, size_t panel, Origin o, Checked& out) {
  const PlanPicture& p = panels[panel];
  auto pixel = [&](double x, double y) {
    return img.at(static_cast<int>(std::floor(o.x + x)), static_cast<int>(std::floor(o.y + y)));
  };
  auto where = [&](size_t chunk) { return p.policy + " panel, chunk " + std::to_string(chunk) + ": "; };
  auto expect_colour = [&](double x, double y, Rgb want, const std::string& what) {
    const Rgb got = pixel(x, y);
    if (!near(got, want)) {
      out.problems.push_back(what + ": pixel at picture (" + std::to_string(x) + ", " + std::to_string(y) + ") is " +
                             show(got) + ", expected " + show(want));
      return false;
    }
    return true;
  };
  for (size_t c = 0; c < drawn_chunks(p); ++c) {  // the chunks the plan used (unused ones are a line of text)
    const ChunkPicture& chunk = p.chunks[c];
    const BarBox box = bar_box(panels, panel, c);
    const double top = box.y + 2.5;  // 2 px into the bar: inside its edge, above the label glyphs
    if (!chunk.used) {
      expect_colour(box.x + box.width / 2, top, kGrey, where(c) + "the unused chunk");
      expect_colour(box.x + box.width * 0.75, box.y + box.height / 2, kGrey, where(c) + "the unused chunk");
      ++out.unused;
    } else {
      const double px_per_row = box.width / p.buffer_token_size;
      for (const Piece& q : chunk.pieces) {
        const double x0 = box.x + q.row_begin * px_per_row;
        const double plain_end = box.x + (q.row_end - q.padding_rows) * px_per_row;
        const double x1 = box.x + q.row_end * px_per_row;
        const std::string what = where(c) + "sequence " + std::to_string(q.sequence);
        if (plain_end - x0 >= 8) {  // never grouped (that takes < 4 px), wide enough to hit inside
          expect_colour((x0 + plain_end) / 2, top, swatch(q.sequence), what);
          ++out.segments;
        }
        if (x1 - plain_end >= 6) {  // the padding: dark hatch lines, never the plain colour
          size_t dark = 0, plain = 0, total = 0;
          for (double y = box.y + 1.5; y < box.y + box.height - 1; y += 1)
            for (double x = plain_end + 1.5; x < x1 - 1; x += 1) {
              const Rgb px = pixel(x, y);
              dark += std::max({px.r, px.g, px.b}) <= 100;
              plain += near(px, swatch(q.sequence), 8);
              ++total;
            }
          if (dark * 5 < total || plain * 20 > total)
            out.problems.push_back(what + ": its " + std::to_string(q.padding_rows) + " rows of padding show " +
                                   std::to_string(dark) + " dark and " + std::to_string(plain) + " plain pixels of " +
                                   std::to_string(total) + ", not a hatch");
          ++out.paddings;
        }
      }
      const double end = box.x + chunk.rows * px_per_row;
      if (box.x + box.width - end >= 12) {
        expect_colour((end + box.x + box.width) / 2, top, kWhite, where(c) + "the free rows past the chunk's end");
        ++out.free_parts;
      }
    }
    // The buffer's end: a 2 px black line centred on the bar's right edge.
    const double right = box.x + box.width;
    expect_colour(right - 0.5, box.y + box.height / 2, kBlack, where(c) + "the buffer-end line");
    expect_colour(right + 0.5, box.y + box.height / 2, kBlack, where(c) + "the buffer-end line");
    ++out.buffer_ends;
  }
}

inline std::string problems(const Checked& c) {
  std::string s;
  for (const std::string& p : c.problems) s += "\n  " + p;
  return s;
}

}  // namespace mlaplan::render::pixels
