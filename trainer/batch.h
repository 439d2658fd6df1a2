// Micro-batches from the committed schedule: step s, micro-batch i, row j is sample
// schedule(s·M·b + i·b + j), the window of T+1 tokens at train-stream offset sample·T.
// Validation batches are the val stream's consecutive windows, the same at every evaluation.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "trainer/data/schedule.h"
#include "trainer/data/shard.h"

namespace wit {

struct MicroBatch {
  torch::Tensor x;  // (b, T) int64 inputs
  torch::Tensor y;  // (b, T) int64 targets, x shifted by one
};

// Token windows (b rows of T+1 uint16) to tensors.
MicroBatch to_micro_batch(const std::vector<uint16_t>& windows, int64_t b, int64_t T);

// The step's source of micro-batches. The trainer's and the verifier's serve the committed
// schedule; a caller may supply another (a test's dishonest trainer trains on other tokens
// through the same step).
class BatchSource {
 public:
  BatchSource(const data::TokenStream& train, int64_t seq_len, int64_t micro_batch_size,
              int64_t micro_batches, uint64_t data_seed);
  BatchSource(const BatchSource&) = default;
  virtual ~BatchSource() = default;

  int64_t seq_len() const { return T_; }
  int64_t micro_batch_size() const { return b_; }
  int64_t micro_batches() const { return M_; }
  uint64_t num_samples() const { return schedule_.num_samples(); }
  const data::Schedule& schedule() const { return schedule_; }

  uint64_t sample_id(int64_t step, int64_t micro, int64_t row) const;
  // b·(T+1) tokens, row-major: the committed schedule's.
  virtual std::vector<uint16_t> micro_batch_tokens(int64_t step, int64_t micro) const;

 private:
  const data::TokenStream* train_;
  int64_t T_, b_, M_;
  data::Schedule schedule_;
};

// Evaluation micro-batch k (0-based): val windows k·b .. k·b+b−1, wrapping around the stream.
std::vector<uint16_t> eval_batch_tokens(const data::TokenStream& val, int64_t seq_len,
                                        int64_t micro_batch_size, int64_t k);

}  // namespace wit
