// `wit inspect RUN`: what a run's witness log says and whether it holds together — steps,
// tokens, losses, checkpoints, chain and signature status — as text, JSON, or a loss plot.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace wit::cli {

struct InspectOptions {
  std::filesystem::path run;  // a run directory or a witness.h5 file
  bool json = false;
  std::filesystem::path plot;  // PNG to draw loss and val loss into; empty: none
  std::string trusted_key;     // public key (hex or PEM file) every signature must be by
};

// Prints the report; returns 0 when the log verifies, 1 when it has problems.
int inspect(const InspectOptions& o);

}  // namespace wit::cli
