// Reduces gradient buckets over ranks while the backward pass goes on: each posted bucket is
// summed in the canonical tree (reduce-scatter, then all-gather) on a helper thread, in the
// order posted, which is the same on every rank. Without thread support it reduces inline.
#pragma once

#include <torch/torch.h>

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "trainer/dist/communicator.h"

namespace wit {

class BucketReducer {
 public:
  // canonical: false sums in arrival order (dist.reduction = arrival).
  explicit BucketReducer(dist::Communicator& comm, bool canonical = true);
  ~BucketReducer();
  BucketReducer(const BucketReducer&) = delete;
  BucketReducer& operator=(const BucketReducer&) = delete;

  // bucket: a contiguous 1-D fp32 view, replaced in place by its sum over ranks. The caller
  // must not touch it until wait() returns.
  void post(torch::Tensor bucket);
  // Every posted bucket is reduced; rethrows the helper thread's failure.
  void wait();

 private:
  void reduce(torch::Tensor& bucket);
  void run();

  dist::Communicator& comm_;
  bool canonical_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<torch::Tensor> queue_;
  int64_t busy_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace wit
