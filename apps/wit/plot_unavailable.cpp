// wit_plot where cairo was not found at build time: every plot is refused with the reason.
#include "apps/wit/plot.h"

#include "core/error.h"

namespace wit::cli {

void write_line_plot(const std::filesystem::path& png, const PlotLabels&,
                     const std::vector<PlotSeries>&, int, int) {
  fail("cannot draw {}: this wit was built without cairo (install libcairo2-dev and rebuild)",
       png.string());
}

}  // namespace wit::cli
