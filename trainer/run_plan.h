// What a run does around its steps, derived once from its resolved config and dataset, and
// shared by `wit train` and `wit verify` so both read the same batches, fingerprint the same way and
// step with the same context: the batch source, the probe batch, the step context, and the
// cadence of fingerprints, evaluations and checkpoints (RunConfig::*_after).
#pragma once

#include "trainer/batch.h"
#include "trainer/data/dataset.h"
#include "record/run_config.h"
#include "trainer/step.h"

namespace wit {

class RunPlan {
 public:
  // Both are kept by reference and must outlive the plan.
  RunPlan(const RunConfig& rc, const data::Dataset& dataset);
  RunPlan(const RunPlan&) = delete;
  RunPlan& operator=(const RunPlan&) = delete;

  const RunConfig& config() const { return rc_; }
  const data::Dataset& dataset() const { return dataset_; }
  const BatchSource& batches() const { return batches_; }
  // The first witness.probe_sequences validation windows: the behavioural fingerprint's input.
  const MicroBatch& probe_batch() const { return probe_; }
  // The context of every step of the run (make_step_context).
  const StepContext& context() const { return ctx_; }
  StepContext& context() { return ctx_; }

 private:
  const RunConfig& rc_;
  const data::Dataset& dataset_;
  BatchSource batches_;
  MicroBatch probe_;
  StepContext ctx_;
};

}  // namespace wit
