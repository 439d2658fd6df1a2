#include "trainer/choice_eval.h"

#include <algorithm>

#include "trainer/step.h"

namespace wit {

namespace {

constexpr int64_t kPadMultiple = 32;

struct Prediction {
  int64_t by_total = 0, by_mean = 0;
};

Prediction predict(Layout& L, const data::ChoiceExample& ex) {
  const int64_t E = int64_t(ex.endings.size());
  const int64_t c = int64_t(ex.context.size());
  int64_t longest = 0;
  for (auto& e : ex.endings) longest = std::max(longest, c + int64_t(e.size()) - 1);
  const int64_t T = std::min(L.config().context, (longest + kPadMultiple - 1) / kPadMultiple *
                                                     kPadMultiple);
  // Inputs: the context and ending but its last token; targets: the next token at each position.
  auto x = torch::zeros({E, T}, torch::kInt64);
  auto y = torch::zeros({E, T}, torch::kInt64);
  auto xa = x.accessor<int64_t, 2>();
  auto ya = y.accessor<int64_t, 2>();
  for (int64_t k = 0; k < E; ++k) {
    std::vector<uint16_t> seq = ex.context;
    seq.insert(seq.end(), ex.endings[k].begin(), ex.endings[k].end());
    for (int64_t t = 0; t + 1 < int64_t(seq.size()); ++t) xa[k][t] = seq[t], ya[k][t] = seq[t + 1];
  }
  const auto logits = forward_logits(L, x.to(L.compute().device)).to(torch::kFloat32);
  if (!L.comm().is_root()) return {};
  torch::NoGradGuard no_grad;
  const auto logp = torch::log_softmax(logits, -1)
                        .gather(-1, y.to(logits.device()).unsqueeze(-1))
                        .squeeze(-1)
                        .to(torch::kCPU, torch::kFloat32)
                        .contiguous();
  const float* lp = logp.data_ptr<float>();
  Prediction p;
  double best_total = 0, best_mean = 0;
  for (int64_t k = 0; k < E; ++k) {
    const int64_t n = int64_t(ex.endings[k].size());
    double total = 0;  // left to right: the same order on every machine and thread count
    for (int64_t t = c - 1; t < c - 1 + n; ++t) total += double(lp[k * T + t]);
    const double mean = total / double(n);
    if (k == 0 || total > best_total) best_total = total, p.by_total = k;
    if (k == 0 || mean > best_mean) best_mean = mean, p.by_mean = k;
  }
  return p;
}

}  // namespace

ChoiceScore score_choices(Layout& L, const data::ChoiceSet& set) {
  if (!L.collective_forward() && !L.comm().is_root()) return {};  // ddp: rank 0 alone
  ChoiceScore s;
  for (const auto& ex : set.examples) {
    const Prediction p = predict(L, ex);
    s.correct += p.by_total == ex.label;
    s.correct_norm += p.by_mean == ex.label;
  }
  s.examples = int64_t(set.examples.size());
  return s;
}

}  // namespace wit
