// A multiple-choice evaluation (trainer/data/choice_set.h) scored with the current weights, the
// same arithmetic as the val loss (the eval-mode forward, no dropout). Each candidate's score is
// the log-probability of its ending's tokens after the context, summed left to right in double:
// `acc` picks the ending with the highest total, `acc_norm` the highest per-token mean (the
// first on a tie). One forward per example, its endings as the batch, padded to a multiple of
// 32 positions: the shapes depend only on the example, so a replay computes the same bits.
#pragma once

#include <cstdint>

#include "trainer/data/choice_set.h"
#include "trainer/layout.h"

namespace wit {

struct ChoiceScore {
  int64_t examples = 0, correct = 0, correct_norm = 0;
  float acc() const { return examples ? float(double(correct) / double(examples)) : 0.0f; }
  float acc_norm() const {
    return examples ? float(double(correct_norm) / double(examples)) : 0.0f;
  }
};

// Collective where the layout's forward is (fsdp); rank 0 has the score.
ChoiceScore score_choices(Layout& layout, const data::ChoiceSet& set);

}  // namespace wit
