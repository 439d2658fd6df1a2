// Loss plots: a valid PNG of the requested size, every series visible in its colour, big
// series, degenerate data, and clear errors.
#include "apps/wit/plot.h"

#include <cairo.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>

#include "core/error.h"
#include "tests/data/temp_dir.h"

namespace wit::cli {
namespace {

using wit::testing::contains;
using wit::testing::error_of;
using wit::testing::TempDir;

// The first two palette entries in plot.cpp, as 8-bit RGB.
struct Rgb8 {
  int r, g, b;
};
constexpr Rgb8 kFirst{31, 119, 180};
constexpr Rgb8 kSecond{230, 85, 13};

// A falling, noisy training loss and a sparse validation loss, like `wit inspect` draws.
std::vector<PlotSeries> loss_series(size_t train_points, size_t evals) {
  PlotSeries train{"train loss", {}, {}, false};
  for (size_t i = 0; i < train_points; ++i) {
    double step = double(i);
    train.x.push_back(step);
    train.y.push_back(2 + 8 * std::exp(-step / (train_points / 5.0)) +
                      0.3 * std::sin(step * 0.7) * std::cos(step * 0.013));
  }
  PlotSeries val{"val loss", {}, {}, true};
  for (size_t k = 0; k < evals; ++k) {
    double step = double(k) * double(train_points) / double(evals);
    val.x.push_back(step);
    val.y.push_back(2.2 + 8 * std::exp(-step / (train_points / 5.0)));
  }
  return {train, val};
}

std::string read_prefix(const std::filesystem::path& file, size_t n) {
  std::ifstream in(file, std::ios::binary);
  std::string bytes(n, '\0');
  in.read(bytes.data(), std::streamsize(n));
  bytes.resize(size_t(in.gcount()));
  return bytes;
}

uint32_t big_endian(const std::string& bytes, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v = (v << 8) | uint8_t(bytes[at + i]);
  return v;
}

// Counts pixels within `tolerance` per channel of `want`, reading the PNG back with cairo.
int count_pixels_near(const std::filesystem::path& png, Rgb8 want, int tolerance = 24) {
  cairo_surface_t* image = cairo_image_surface_create_from_png(png.string().c_str());
  EXPECT_EQ(cairo_surface_status(image), CAIRO_STATUS_SUCCESS);
  int count = 0;
  if (cairo_surface_status(image) == CAIRO_STATUS_SUCCESS) {
    cairo_surface_flush(image);
    const unsigned char* data = cairo_image_surface_get_data(image);
    int w = cairo_image_surface_get_width(image), h = cairo_image_surface_get_height(image);
    int stride = cairo_image_surface_get_stride(image);
    for (int y = 0; y < h; ++y) {
      const uint32_t* row = reinterpret_cast<const uint32_t*>(data + size_t(y) * stride);
      for (int x = 0; x < w; ++x) {
        int r = (row[x] >> 16) & 0xff, g = (row[x] >> 8) & 0xff, b = row[x] & 0xff;
        if (std::abs(r - want.r) <= tolerance && std::abs(g - want.g) <= tolerance &&
            std::abs(b - want.b) <= tolerance)
          ++count;
      }
    }
  }
  cairo_surface_destroy(image);
  return count;
}

TEST(Plot, writes_png_of_requested_size) {
  TempDir dir;
  std::filesystem::path png = dir / "loss.png";
  write_line_plot(png, {"run abc"}, loss_series(500, 10), 640, 480);
  std::string head = read_prefix(png, 24);
  ASSERT_EQ(head.size(), 24u);
  EXPECT_EQ(head.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(head.substr(12, 4), "IHDR");
  EXPECT_EQ(big_endian(head, 16), 640u);
  EXPECT_EQ(big_endian(head, 20), 480u);
  EXPECT_GT(std::filesystem::file_size(png), 5000u);
}

TEST(Plot, every_series_is_drawn_in_its_own_colour) {
  TempDir dir;
  std::filesystem::path png = dir / "loss.png";
  write_line_plot(png, {"two series"}, loss_series(2000, 20));
  // More pixels than a legend swatch holds (~100), so the curves themselves are there.
  EXPECT_GT(count_pixels_near(png, kFirst), 400);
  EXPECT_GT(count_pixels_near(png, kSecond), 400);
  // A single series uses only the first colour.
  std::vector<PlotSeries> one = loss_series(2000, 20);
  one.pop_back();
  write_line_plot(png, {"one series"}, one);
  EXPECT_GT(count_pixels_near(png, kFirst), 400);
  EXPECT_EQ(count_pixels_near(png, kSecond), 0);
}

TEST(Plot, million_point_series_renders) {
  TempDir dir;
  std::filesystem::path png = dir / "big.png";
  write_line_plot(png, {"a long run"}, loss_series(1'000'000, 100));
  EXPECT_GT(count_pixels_near(png, kFirst), 400);
  EXPECT_GT(count_pixels_near(png, kSecond), 100);
}

TEST(Plot, degenerate_data_still_plots) {
  TempDir dir;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<PlotSeries>> cases = {
      {{"one point", {7}, {3.5}, true}},
      {{"constant", {0, 1, 2, 3}, {2, 2, 2, 2}, false}},
      {{"zero", {0, 1, 2}, {0, 0, 0}, false}},
      {{"late start", {1000, 1001, 1002}, {5, 4, 3}, false}},
      {{"gaps", {0, 1, 2, 3, 4}, {5, nan, 4, inf, 3}, false},
       {"all nan", {0, 1}, {nan, nan}, true}},
      {{"empty", {}, {}, false}, {"tiny values", {0, 1}, {1e-9, 2e-9}, true}},
      {{"huge values", {0, 1}, {1e12, 3e12}, false}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    std::filesystem::path png = dir / ("case" + std::to_string(i) + ".png");
    write_line_plot(png, {}, cases[i]);
    EXPECT_GT(count_pixels_near(png, kFirst) + count_pixels_near(png, kSecond), 0) << i;
  }
}

TEST(Plot, no_finite_point_is_an_error) {
  TempDir dir;
  std::filesystem::path png = dir / "empty.png";
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::string e = error_of([&] { write_line_plot(png, {}, {{"nan", {0, 1}, {nan, nan}}}); });
  EXPECT_TRUE(contains(e, "no series has a finite point")) << e;
  EXPECT_TRUE(contains(e, png.string())) << e;
  e = error_of([&] { write_line_plot(png, {}, {}); });
  EXPECT_TRUE(contains(e, "no series has a finite point")) << e;
  EXPECT_FALSE(std::filesystem::exists(png));
}

TEST(Plot, unwritable_path_is_an_error_naming_it) {
  TempDir dir;
  std::filesystem::path png = dir / "no-such-dir" / "loss.png";
  std::string e = error_of([&] { write_line_plot(png, {}, loss_series(100, 5)); });
  EXPECT_TRUE(contains(e, "cannot write plot")) << e;
  EXPECT_TRUE(contains(e, png.string())) << e;
}

TEST(Plot, bad_input_is_an_error) {
  TempDir dir;
  std::filesystem::path png = dir / "bad.png";
  std::string e = error_of([&] { write_line_plot(png, {}, {{"short", {0, 1, 2}, {1, 2}}}); });
  EXPECT_TRUE(contains(e, "series 'short' has 3 x values but 2 y values")) << e;
  e = error_of([&] { write_line_plot(png, {}, loss_series(10, 2), 0, 600); });
  EXPECT_TRUE(contains(e, "size 0x600")) << e;
}

}  // namespace
}  // namespace wit::cli
