#include "trainer/bucket_reducer.h"

#include "core/error.h"

namespace wit {

BucketReducer::BucketReducer(dist::Communicator& comm, bool canonical)
    : comm_(comm), canonical_(canonical) {
  if (comm_.supports_helper_thread()) thread_ = std::thread([this] { run(); });
}

BucketReducer::~BucketReducer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void BucketReducer::reduce(torch::Tensor& bucket) {
  WIT_CHECK(bucket.is_contiguous() && bucket.dtype() == torch::kFloat32, "bucket layout");
  const int64_t n = bucket.numel(), N = comm_.size();
  if (!canonical_) return dist::sum_in_arrival_order(comm_, bucket.data_ptr<float>(), n);
  // Any split works: every element is summed over ranks in the same tree whoever owns it.
  std::vector<int64_t> counts(static_cast<size_t>(N), n / N);
  for (int64_t r = 0; r < n % N; ++r) ++counts[size_t(r)];
  int64_t mine = 0;
  for (int r = 0; r < comm_.rank(); ++r) mine += counts[size_t(r)];
  float* p = bucket.data_ptr<float>();
  comm_.reduce_scatter_canonical_v(p, counts);
  comm_.all_gather_v(p + mine, p, counts);
}

void BucketReducer::post(torch::Tensor bucket) {
  if (!thread_.joinable()) return reduce(bucket);
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(bucket));
    ++busy_;
  }
  cv_.notify_all();
}

void BucketReducer::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return busy_ == 0; });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void BucketReducer::run() {
  for (;;) {
    torch::Tensor bucket;
    bool failed = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      bucket = std::move(queue_.front());
      queue_.pop_front();
      failed = error_ != nullptr;
    }
    try {
      if (!failed) reduce(bucket);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      error_ = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      --busy_;
    }
    cv_.notify_all();
  }
}

}  // namespace wit
