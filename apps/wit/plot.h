// Line plots to PNG (cairo), for `wit inspect --plot`: training loss and validation loss
// against step, on one pair of axes with a legend.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace wit::cli {

struct PlotSeries {
  std::string label;         // shown in the legend
  std::vector<double> x, y;  // same length; non-finite y values are skipped
  bool markers = false;      // draw a dot at each point (sparse series such as evals)
};

struct PlotLabels {
  std::string title;
  std::string x_axis = "step";
  std::string y_axis = "loss";
};

// Writes a width×height PNG. Axes span the data with "nice" tick values. Throws wit::Error
// naming the file when it cannot be written, or when no series has a finite point.
void write_line_plot(const std::filesystem::path& png, const PlotLabels& labels,
                     const std::vector<PlotSeries>& series, int width = 1000, int height = 600);

}  // namespace wit::cli
