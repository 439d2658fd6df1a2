#include "trainer/batch.h"

#include "core/error.h"

namespace wit {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "token bytes are hashed as stored");

namespace {

uint64_t window_count(const data::TokenStream& s, int64_t T, const char* split) {
  if (s.size() < uint64_t(T) + 1)
    fail("the {} split holds {} tokens: too few for one sequence of data.seq_len = {} (+1)", split,
         s.size(), T);
  return (s.size() - 1) / uint64_t(T);
}

}  // namespace

MicroBatch to_micro_batch(const std::vector<uint16_t>& w, int64_t b, int64_t T) {
  WIT_CHECK(int64_t(w.size()) == b * (T + 1), "window buffer has {} tokens, expected {}", w.size(),
            b * (T + 1));
  auto x = torch::empty({b, T}, torch::kInt64), y = torch::empty({b, T}, torch::kInt64);
  int64_t* px = x.data_ptr<int64_t>();
  int64_t* py = y.data_ptr<int64_t>();
  for (int64_t r = 0; r < b; ++r)
    for (int64_t t = 0; t < T; ++t) {
      px[r * T + t] = w[r * (T + 1) + t];
      py[r * T + t] = w[r * (T + 1) + t + 1];
    }
  return {x, y};
}

BatchSource::BatchSource(const data::TokenStream& train, int64_t seq_len, int64_t micro_batch_size,
                         int64_t micro_batches, uint64_t data_seed)
    : train_(&train),
      T_(seq_len),
      b_(micro_batch_size),
      M_(micro_batches),
      schedule_(window_count(train, seq_len, "train"), data_seed) {}

uint64_t BatchSource::sample_id(int64_t step, int64_t micro, int64_t row) const {
  const uint64_t pos = (uint64_t(step) * uint64_t(M_) + uint64_t(micro)) * uint64_t(b_) + row;
  return schedule_.sample_at(pos);
}

std::vector<uint16_t> BatchSource::micro_batch_tokens(int64_t step, int64_t micro) const {
  std::vector<uint16_t> out(size_t(b_ * (T_ + 1)));
  for (int64_t r = 0; r < b_; ++r)
    train_->read(sample_id(step, micro, r) * uint64_t(T_), uint64_t(T_ + 1),
                 out.data() + r * (T_ + 1));
  return out;
}

std::vector<uint16_t> eval_batch_tokens(const data::TokenStream& val, int64_t T, int64_t b,
                                        int64_t k) {
  const uint64_t windows = window_count(val, T, "val");
  std::vector<uint16_t> out(size_t(b * (T + 1)));
  for (int64_t r = 0; r < b; ++r)
    val.read(((uint64_t(k) * b + r) % windows) * uint64_t(T), uint64_t(T + 1),
             out.data() + r * (T + 1));
  return out;
}

}  // namespace wit
