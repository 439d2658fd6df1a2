// A witness log summarised: what `wit inspect` prints (as text or JSON) and a board's entry page
// shows. No torch.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "record/reader.h"

namespace wit::witness {

// Steps, tokens, losses, evaluations, checkpoints, heads, chain, signatures, problems, sessions.
nlohmann::json log_summary(const WitnessLog& log, const LogReport& report);
// The same as lines of text; `name` replaces the log's path in the first line when given.
std::string summary_text(const WitnessLog& log, const LogReport& report,
                         const std::string& name = "");

}  // namespace wit::witness
