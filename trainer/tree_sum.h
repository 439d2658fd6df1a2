// The canonical summation order for the M micro-batch terms of a step (gradients, losses).
//
// Definition: S(terms[lo,hi)) with n = hi−lo is, for even n, S(first half) + S(second half);
// for odd n, the left-to-right sum ((t_lo + t_lo+1) + ...) + t_hi−1.
// So M = 2^a·q (q odd) gives a perfect binary tree over 2^a groups of q consecutive terms.
// Any aligned block of M/N terms, N a power of two dividing 2^a, is a subtree: N ranks can each
// sum their block and combine pairwise (partner r xor 1, r xor 2, ...) and reach the same bits.
//
// CanonicalSum computes it streaming, holding O(log M) partial sums (a binary-counter stack).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/error.h"

namespace wit {

// Add(T& acc, const T& x) must do acc = acc + x, where the left operand is the earlier terms.
template <typename T, typename Add>
class CanonicalSum {
 public:
  CanonicalSum(int64_t num_terms, Add add) : n_(num_terms), add_(std::move(add)) {
    WIT_CHECK(num_terms >= 1, "a sum needs at least one term");
    group_ = n_;
    while (group_ % 2 == 0) group_ /= 2;
  }

  // Terms must arrive in index order.
  void push(T x) {
    WIT_CHECK(pushed_ < n_, "more than {} terms pushed", n_);
    ++pushed_;
    if (in_group_ == 0)
      current_ = std::move(x);
    else
      add_(current_, x);
    if (++in_group_ < group_) return;
    in_group_ = 0;
    // Carry like a binary counter: equal-level neighbours merge into the next level.
    int level = 0;
    T node = std::move(current_);
    while (!stack_.empty() && stack_.back().first == level) {
      T left = std::move(stack_.back().second);
      stack_.pop_back();
      add_(left, node);
      node = std::move(left);
      ++level;
    }
    stack_.emplace_back(level, std::move(node));
  }

  bool done() const { return pushed_ == n_; }

  // A copy of the partial state with every held value passed through f (e.g. a narrow view of
  // a slice) and another add: finishing the copy finishes that slice of the sum, same tree.
  template <typename F, typename Add2>
  CanonicalSum<T, Add2> map(F f, Add2 add) const {
    CanonicalSum<T, Add2> c(n_, std::move(add));
    c.pushed_ = pushed_;
    c.in_group_ = in_group_;
    if (in_group_ > 0) c.current_ = f(current_);
    for (auto& [level, v] : stack_) c.stack_.emplace_back(level, f(v));
    return c;
  }

  T result() {
    WIT_CHECK(pushed_ == n_ && stack_.size() == 1, "sum of {} terms is incomplete ({} pushed)", n_,
              pushed_);
    return std::move(stack_.back().second);
  }

 private:
  template <typename, typename>
  friend class CanonicalSum;
  int64_t n_, group_, pushed_ = 0, in_group_ = 0;
  Add add_;
  T current_{};
  std::vector<std::pair<int, T>> stack_;
};

template <typename T, typename Add>
CanonicalSum<T, Add> make_canonical_sum(int64_t num_terms, Add add) {
  return CanonicalSum<T, Add>(num_terms, std::move(add));
}

}  // namespace wit
