#include "trainer/run_plan.h"

namespace wit {

RunPlan::RunPlan(const RunConfig& rc, const data::Dataset& dataset)
    : rc_(rc),
      dataset_(dataset),
      batches_(dataset.train(), rc.data.seq_len, rc.train.micro_batch_size,
               rc.train.micro_batches, rc.data.seed),
      probe_(to_micro_batch(
          eval_batch_tokens(dataset.val(), rc.data.seq_len, rc.witness.probe_sequences, 0),
          rc.witness.probe_sequences, rc.data.seq_len)),
      ctx_(make_step_context(rc, batches_)) {}

}  // namespace wit
