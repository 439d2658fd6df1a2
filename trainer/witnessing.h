// What the training loop hands the witness log: the run's /meta (config commitments, versions,
// hardware, hosts), the signing key, and each step's record as log fields.
#pragma once

#include <filesystem>
#include <string>

#include "core/config.h"
#include "trainer/compute.h"
#include "trainer/data/manifest.h"
#include "trainer/dist/communicator.h"
#include "record/run_config.h"
#include "trainer/step.h"
#include "record/reader.h"
#include "record/signing.h"

namespace wit {

// The signing key of `wit train`: `explicit_key` if given (it must exist), else the default key
// (witness::default_key_path()), created on first use with a note on stdout.
witness::SigningKey training_key(const std::filesystem::path& explicit_key, bool quiet);

// This session's facts as one JSON object (collective: host names are gathered from every rank).
// `compute`'s device facts (the GPU model and library versions of a GPU run) are among them.
std::string session_json(dist::Communicator& comm, const RunConfig& rc, const std::string& layout,
                         int64_t first_step, const Compute& compute = {});

witness::RunMeta run_meta(const config::Config& cfg,
                          const data::Manifest& manifest, int64_t num_params,
                          const witness::PublicKey& key, const std::string& session);

witness::StepFields step_fields(const StepRecord& r);

}  // namespace wit
