#include "apps/wit/inspect.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "apps/wit/plot.h"
#include "core/error.h"
#include "witness/log/reader.h"
#include "witness/log/summary.h"

namespace wit::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path log_path(const fs::path& run) {
  if (fs::is_directory(run)) {
    const fs::path f = run / witness::kLogFileName;
    if (!fs::exists(f))
      fail("{} has no {}: not a run directory of a witnessed run", run.string(),
           witness::kLogFileName);
    return f;
  }
  if (!fs::exists(run)) fail("{} does not exist", run.string());
  return run;
}

void plot(const witness::WitnessLog& log, const fs::path& png) {
  PlotSeries train{"train loss", {}, {}, false}, val{"val loss", {}, {}, true};
  for (auto& s : log.tables.steps) {
    train.x.push_back(double(s.fields.step + 1));  // after the step
    train.y.push_back(s.fields.loss);
  }
  for (auto& e : log.tables.evals)
    if (e.fields.split == "val" && e.fields.metric == "loss") {
      val.x.push_back(double(e.fields.step));
      val.y.push_back(e.fields.value);
    }
  std::vector<PlotSeries> series{train};
  if (!val.x.empty()) series.push_back(val);
  if (train.x.empty() && val.x.empty()) fail("{} has no steps to plot yet", log.path.string());
  const std::string name = log.path.parent_path().filename().string();
  write_line_plot(png, {"loss of run " + (name.empty() ? log.path.string() : name), "step", "loss"},
                  series);
}

}  // namespace

int inspect(const InspectOptions& o) {
  const fs::path file = log_path(o.run);
  const witness::WitnessLog log = witness::read_log(file);
  std::optional<witness::PublicKey> trusted;
  if (!o.trusted_key.empty()) trusted = witness::load_public_key(o.trusted_key);
  const witness::LogReport report = witness::check_log(log, trusted);
  if (o.json)
    fmt::print("{}\n", witness::log_summary(log, report).dump(2));
  else
    fmt::print("{}", witness::summary_text(log, report));
  if (!o.plot.empty()) {
    plot(log, o.plot);
    if (!o.json) fmt::print("  plot         {}\n", o.plot.string());
  }
  return report.ok() ? 0 : 1;
}

}  // namespace wit::cli
