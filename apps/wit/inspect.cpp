#include "apps/wit/inspect.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "apps/wit/plot.h"
#include "core/error.h"
#include "trainer/checkpoint_file.h"
#include "record/reader.h"
#include "record/summary.h"

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

// The checkpoint files a run directory holds against the ones its log commits to: each present,
// of the size its header implies, naming the run, the logged step and the logged state hash.
// Cheap (headers and ends only); `wit verify` checks the contents.
std::vector<std::string> checkpoint_file_problems(const witness::WitnessLog& log,
                                                  const fs::path& run) {
  std::vector<std::string> out;
  for (const auto& row : log.tables.checkpoints) {
    const uint64_t step = row.fields.step;
    const fs::path file = run / witness::checkpoint_file_name(step);
    try {
      if (!fs::exists(file)) {
        out.push_back(fmt::format("checkpoint after step {}: {} is missing", step, file.string()));
        continue;
      }
      const CheckpointInfo info = read_checkpoint_info(file);
      if (uint64_t(info.step) != step || info.genesis != log.genesis ||
          uint64_t(info.num_params) != log.meta.num_params)
        out.push_back(fmt::format("checkpoint after step {}: {} holds step {} of another run or "
                                  "model (genesis {})",
                                  step, file.string(), info.step,
                                  to_hex(info.genesis).substr(0, 16)));
      else if (info.state_hash != row.fields.state_hash)
        out.push_back(fmt::format("checkpoint after step {}: {} has state {}, the log commits "
                                  "to {}",
                                  step, file.string(), to_hex(info.state_hash).substr(0, 16),
                                  to_hex(row.fields.state_hash).substr(0, 16)));
    } catch (const std::exception& e) {
      out.push_back(fmt::format("checkpoint after step {}: {}", step, e.what()));
    }
  }
  return out;
}

}  // namespace

int inspect(const InspectOptions& o) {
  const fs::path file = log_path(o.run);
  const witness::WitnessLog log = witness::read_log(file);
  std::optional<witness::PublicKey> trusted;
  if (!o.trusted_key.empty()) trusted = witness::load_public_key(o.trusted_key);
  const witness::LogReport report = witness::check_log(log, trusted);
  // Given a run directory, its checkpoint files too.
  const bool run_dir = fs::is_directory(o.run);
  const std::vector<std::string> files =
      run_dir ? checkpoint_file_problems(log, o.run) : std::vector<std::string>{};
  if (o.json) {
    json j = witness::log_summary(log, report);
    if (run_dir) j["checkpoint_file_problems"] = files;
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("{}", witness::summary_text(log, report));
    if (run_dir && files.empty())
      fmt::print("  files        {} checkpoint file(s) present, their headers matching the log "
                 "(contents: `wit verify`)\n",
                 log.tables.checkpoints.size());
    for (const std::string& f : files) fmt::print("  PROBLEM      {}\n", f);
  }
  if (!o.plot.empty()) {
    plot(log, o.plot);
    if (!o.json) fmt::print("  plot         {}\n", o.plot.string());
  }
  return report.ok() && files.empty() ? 0 : 1;
}

}  // namespace wit::cli
