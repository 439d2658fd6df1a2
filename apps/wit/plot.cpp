#include "apps/wit/plot.h"

#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "core/error.h"

namespace wit::cli {
namespace {

struct Rgb {
  double r, g, b;
};

// Distinct, saturated colours; tests look for the first two in the output.
constexpr Rgb kPalette[] = {
    {0.122, 0.467, 0.706},  // blue
    {0.902, 0.333, 0.051},  // orange
    {0.173, 0.627, 0.173},  // green
    {0.800, 0.141, 0.157},  // red
    {0.502, 0.329, 0.710},  // purple
    {0.035, 0.635, 0.690},  // teal
    {0.553, 0.337, 0.294},  // brown
    {0.851, 0.353, 0.690},  // pink
};
constexpr int kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);

constexpr double kPi = 3.14159265358979323846;
constexpr const char* kFont = "DejaVu Sans";
constexpr double kMarkerRadius = 3.5;
constexpr double kTickFont = 12, kAxisFont = 13, kTitleFont = 16;

using Surface = std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)>;
using Context = std::unique_ptr<cairo_t, decltype(&cairo_destroy)>;

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  double span() const { return hi - lo; }
};

// The smallest 1, 2 or 5 × 10^k that is at least `raw`.
double nice_step(double raw) {
  double decade = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * decade >= raw * (1 - 1e-9)) return m * decade;
  return 10 * decade;
}

std::vector<double> ticks_for(const Range& r, double step) {
  std::vector<double> ticks;
  double first = std::ceil(r.lo / step - 1e-9);
  for (int i = 0; i < 1000; ++i) {
    double t = (first + i) * step;
    if (t > r.hi + step * 1e-9) break;
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);  // no "-0"
  }
  return ticks;
}

// Enough digits to tell neighbouring ticks apart, and no more.
std::string tick_label(double v, double step, const Range& r) {
  int step_exp = int(std::floor(std::log10(step) + 1e-9));
  double biggest = std::max(std::abs(r.lo), std::abs(r.hi));
  if (step_exp < -6 || biggest >= 1e9) {
    int big_exp = biggest > 0 ? int(std::floor(std::log10(biggest))) : step_exp;
    return fmt::format("{:.{}e}", v, std::max(0, big_exp - step_exp));
  }
  return fmt::format("{:.{}f}", v, std::max(0, -step_exp));
}

double text_width(cairo_t* cr, const std::string& s) {
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  return e.x_advance;
}

void set_font(cairo_t* cr, double size, bool bold = false) {
  cairo_select_font_face(cr, kFont, CAIRO_FONT_SLANT_NORMAL,
                         bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
}

// Draws `s` with its horizontal anchor at x (0 left, 0.5 centre, 1 right) and its
// vertical centre at y.
void draw_text(cairo_t* cr, const std::string& s, double x, double y, double anchor) {
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  cairo_move_to(cr, x - anchor * e.x_advance, y - (e.y_bearing + e.height / 2));
  cairo_show_text(cr, s.c_str());
}

// Picks a nice step giving about `target` ticks, then widens it until labels of
// `label_extent(tick)` pixels fit within the tick spacing.
template <typename Extent>
double choose_step(const Range& r, double pixels, double target, Extent label_extent) {
  double step = nice_step(r.span() / std::max(1.0, target));
  for (int tries = 0; tries < 20; ++tries) {
    double widest = 0;
    for (double t : ticks_for(r, step)) widest = std::max(widest, label_extent(t, step));
    if (step / r.span() * pixels >= widest + 12) break;
    step = nice_step(step * 1.5);
  }
  return step;
}

// Data bounds with padding: constant data gets a unit-ish range so the axis still has ticks.
Range padded(Range r, double margin_fraction) {
  if (r.span() <= 0) {
    double pad = r.lo == 0 ? 1.0 : std::abs(r.lo) * 0.1;
    return {r.lo - pad, r.hi + pad};
  }
  double pad = r.span() * margin_fraction;
  return {r.lo - pad, r.hi + pad};
}

struct Axes {
  double left, top, right, bottom;  // plot area in pixels
  Range x, y;
  double px(double v) const { return left + (v - x.lo) / x.span() * (right - left); }
  double py(double v) const { return bottom - (v - y.lo) / y.span() * (bottom - top); }
};

bool finite_point(const PlotSeries& s, size_t i) {
  return std::isfinite(s.x[i]) && std::isfinite(s.y[i]);
}

// Traces the series as one path, keeping per pixel column only the first, lowest, highest
// and last points: at most four vertices per column, yet the drawn envelope is unchanged.
void trace_line(cairo_t* cr, const Axes& a, const PlotSeries& s) {
  bool started = false;
  auto vertex = [&](size_t i) {
    double x = a.px(s.x[i]), y = a.py(s.y[i]);
    if (started) {
      cairo_line_to(cr, x, y);
    } else {
      cairo_move_to(cr, x, y);
      started = true;
    }
  };
  const size_t none = std::numeric_limits<size_t>::max();
  size_t first = none, lo = none, hi = none, last = none;
  double column = 0;
  auto flush = [&] {
    if (first == none) return;
    size_t order[4] = {first, std::min(lo, hi), std::max(lo, hi), last};
    size_t prev = none;
    for (size_t i : order)
      if (i != prev) vertex(prev = i);
  };
  for (size_t i = 0; i < s.x.size(); ++i) {
    if (!finite_point(s, i)) continue;
    double c = std::floor(a.px(s.x[i]));
    if (first == none || c != column) {
      flush();
      first = lo = hi = i;
      column = c;
    }
    if (s.y[i] < s.y[lo]) lo = i;
    if (s.y[i] > s.y[hi]) hi = i;
    last = i;
  }
  flush();
}

void draw_marker(cairo_t* cr, double x, double y) {
  cairo_new_sub_path(cr);
  cairo_arc(cr, x, y, kMarkerRadius, 0, 2 * kPi);
}

void draw_series(cairo_t* cr, const Axes& a, const PlotSeries& s, const Rgb& c) {
  cairo_set_source_rgb(cr, c.r, c.g, c.b);
  cairo_set_line_width(cr, s.markers ? 1.5 : 1.25);
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
  trace_line(cr, a, s);
  cairo_stroke(cr);
  if (!s.markers) return;
  // One marker per pixel: more would only repaint the same dot.
  double last_x = NAN, last_y = NAN;
  for (size_t i = 0; i < s.x.size(); ++i) {
    if (!finite_point(s, i)) continue;
    double x = std::round(a.px(s.x[i])), y = std::round(a.py(s.y[i]));
    if (x == last_x && y == last_y) continue;
    draw_marker(cr, a.px(s.x[i]), a.py(s.y[i]));
    last_x = x;
    last_y = y;
  }
  cairo_fill(cr);
}

void draw_legend(cairo_t* cr, const Axes& a, const std::vector<PlotSeries>& series) {
  set_font(cr, kTickFont);
  const double swatch = 26, pad = 8, row = 20;
  double widest = 0;
  for (const PlotSeries& s : series) widest = std::max(widest, text_width(cr, s.label));
  double w = pad + swatch + 6 + widest + pad, h = pad + row * series.size() + pad - 4;
  // Top right: loss curves fall, so that corner is usually empty.
  double x0 = std::round(a.right - 10 - w) + 0.5, y0 = std::round(a.top + 10) + 0.5;
  cairo_rectangle(cr, x0, y0, w, h);
  cairo_set_source_rgba(cr, 1, 1, 1, 0.92);
  cairo_fill_preserve(cr);
  cairo_set_source_rgb(cr, 0.6, 0.6, 0.6);
  cairo_set_line_width(cr, 1);
  cairo_stroke(cr);
  for (size_t k = 0; k < series.size(); ++k) {
    const Rgb& c = kPalette[k % kPaletteSize];
    double cy = y0 + pad + row * k + row / 2 - 2;
    cairo_set_source_rgb(cr, c.r, c.g, c.b);
    cairo_set_line_width(cr, 2.5);
    cairo_move_to(cr, x0 + pad, cy);
    cairo_line_to(cr, x0 + pad + swatch, cy);
    cairo_stroke(cr);
    if (series[k].markers) {
      draw_marker(cr, x0 + pad + swatch / 2, cy);
      cairo_fill(cr);
    }
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    draw_text(cr, series[k].label, x0 + pad + swatch + 6, cy, 0);
  }
}

// The frame and its tick marks.
void draw_frame(cairo_t* cr, const Axes& a, const std::vector<double>& x_ticks,
                const std::vector<double>& y_ticks) {
  cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
  cairo_rectangle(cr, std::round(a.left) + 0.5, std::round(a.top) + 0.5,
                  std::round(a.right) - std::round(a.left),
                  std::round(a.bottom) - std::round(a.top));
  for (double t : x_ticks) {
    double x = std::round(a.px(t)) + 0.5;
    cairo_move_to(cr, x, std::round(a.bottom) + 0.5);
    cairo_line_to(cr, x, std::round(a.bottom) + 5.5);
  }
  for (double t : y_ticks) {
    double y = std::round(a.py(t)) + 0.5;
    cairo_move_to(cr, std::round(a.left) + 0.5, y);
    cairo_line_to(cr, std::round(a.left) - 4.5, y);
  }
  cairo_stroke(cr);
}

void draw_tick_labels(cairo_t* cr, const Axes& a, const std::vector<double>& x_ticks,
                      double x_step, const std::vector<double>& y_ticks, double y_step,
                      double font_height, int width) {
  cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
  for (double t : x_ticks) {
    // An end label may overhang the plot; keep it inside the image.
    std::string s = tick_label(t, x_step, a.x);
    double half = text_width(cr, s) / 2;
    double x = std::clamp(a.px(t), half + 2, width - half - 2);
    draw_text(cr, s, x, a.bottom + 8 + font_height / 2, 0.5);
  }
  for (double t : y_ticks) draw_text(cr, tick_label(t, y_step, a.y), a.left - 8, a.py(t), 1);
}

// The axis labels and the title.
void draw_axis_labels(cairo_t* cr, const Axes& a, const PlotLabels& labels, int height) {
  set_font(cr, kAxisFont);
  draw_text(cr, labels.x_axis, (a.left + a.right) / 2, height - 16, 0.5);
  cairo_save(cr);
  cairo_translate(cr, 14 + kAxisFont / 2, (a.top + a.bottom) / 2);
  cairo_rotate(cr, -kPi / 2);
  draw_text(cr, labels.y_axis, 0, 0, 0.5);
  cairo_restore(cr);
  if (!labels.title.empty()) {
    set_font(cr, kTitleFont, true);
    draw_text(cr, labels.title, (a.left + a.right) / 2, 24, 0.5);
  }
}

}  // namespace

void write_line_plot(const std::filesystem::path& png, const PlotLabels& labels,
                     const std::vector<PlotSeries>& series, int width, int height) {
  const std::string file = png.string();
  if (width < 200 || height < 150 || width > 16384 || height > 16384)
    fail("plot {}: size {}x{} is outside 200x150 .. 16384x16384", file, width, height);
  Range xr, yr;
  for (const PlotSeries& s : series) {
    if (s.x.size() != s.y.size())
      fail("plot {}: series '{}' has {} x values but {} y values", file, s.label, s.x.size(),
           s.y.size());
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!finite_point(s, i)) continue;
      xr.add(s.x[i]);
      yr.add(s.y[i]);
    }
  }
  if (!(xr.lo <= xr.hi)) fail("plot {}: no series has a finite point to draw", file);
  if (!std::isfinite(xr.span()) || !std::isfinite(yr.span()))
    fail("plot {}: the data range is too large to draw", file);

  Surface surface(cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height),
                  cairo_surface_destroy);
  if (cairo_status_t st = cairo_surface_status(surface.get()); st != CAIRO_STATUS_SUCCESS)
    fail("plot {}: cannot create a {}x{} image: {}", file, width, height,
         cairo_status_to_string(st));
  Context ctx(cairo_create(surface.get()), cairo_destroy);
  cairo_t* cr = ctx.get();
  if (cairo_status_t st = cairo_status(cr); st != CAIRO_STATUS_SUCCESS)
    fail("plot {}: cannot draw: {}", file, cairo_status_to_string(st));

  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);

  // Vertical layout is fixed; the left margin waits for the widest y tick label.
  Axes a;
  a.x = xr.span() > 0 ? xr : padded(xr, 0);
  a.y = padded(yr, 0.05);
  a.top = labels.title.empty() ? 20 : 48;
  a.bottom = height - 58;
  a.right = width - 24;
  set_font(cr, kTickFont);
  cairo_font_extents_t fe;
  cairo_font_extents(cr, &fe);
  double y_step = choose_step(a.y, a.bottom - a.top, (a.bottom - a.top) / 60,
                              [&](double, double) { return fe.height; });
  std::vector<double> y_ticks = ticks_for(a.y, y_step);
  double y_label_w = 0;
  for (double t : y_ticks)
    y_label_w = std::max(y_label_w, text_width(cr, tick_label(t, y_step, a.y)));
  a.left = 14 + kAxisFont + 10 + y_label_w + 8;
  if (a.right - a.left < 50 || a.bottom - a.top < 50)
    fail("plot {}: size {}x{} leaves no room for the axes", file, width, height);
  double x_step =
      choose_step(a.x, a.right - a.left, (a.right - a.left) / 100,
                  [&](double t, double step) { return text_width(cr, tick_label(t, step, a.x)); });
  std::vector<double> x_ticks = ticks_for(a.x, x_step);

  // Grid, on whole pixels so 1-pixel lines stay crisp.
  cairo_set_line_width(cr, 1);
  cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
  for (double t : x_ticks) {
    double x = std::round(a.px(t)) + 0.5;
    cairo_move_to(cr, x, a.top);
    cairo_line_to(cr, x, a.bottom);
  }
  for (double t : y_ticks) {
    double y = std::round(a.py(t)) + 0.5;
    cairo_move_to(cr, a.left, y);
    cairo_line_to(cr, a.right, y);
  }
  cairo_stroke(cr);

  cairo_save(cr);
  // Slightly past the frame, so markers on the first and last step show whole.
  const double overhang = kMarkerRadius + 1;
  cairo_rectangle(cr, a.left - overhang, a.top - overhang, a.right - a.left + 2 * overhang,
                  a.bottom - a.top + 2 * overhang);
  cairo_clip(cr);
  for (size_t k = 0; k < series.size(); ++k)
    draw_series(cr, a, series[k], kPalette[k % kPaletteSize]);
  cairo_restore(cr);

  draw_frame(cr, a, x_ticks, y_ticks);
  draw_tick_labels(cr, a, x_ticks, x_step, y_ticks, y_step, fe.height, width);
  draw_axis_labels(cr, a, labels, height);

  if (!series.empty()) draw_legend(cr, a, series);

  if (cairo_status_t st = cairo_status(cr); st != CAIRO_STATUS_SUCCESS)
    fail("plot {}: drawing failed: {}", file, cairo_status_to_string(st));
  cairo_surface_flush(surface.get());
  if (cairo_status_t st = cairo_surface_write_to_png(surface.get(), file.c_str());
      st != CAIRO_STATUS_SUCCESS)
    fail("cannot write plot {}: {}", file, cairo_status_to_string(st));
}

}  // namespace wit::cli
