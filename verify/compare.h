// How a replay's results are held against the log's: a stage stops at its first mismatch,
// thrown as a Mismatch; exact replay compares bits, a tolerance replay relative distances.
#pragma once

#include <optional>
#include <string>

#include "record/format.h"
#include "trainer/dist/communicator.h"
#include "verify/verify.h"

namespace wit::witness {

// Thrown at a stage's first mismatch, caught by the stage runner. `outputs`: what differs is a
// result of computation (loss, weights, evaluations), not an input the log commits to (data,
// hyperparameters, files).
struct Mismatch {
  std::string what;
  bool outputs = false;
};
[[noreturn]] void mismatch(std::string what, bool outputs = false);

// "2.3536012 (0x4016a167)": a float with its bits.
std::string bits(float v);
// A distance between two floats relative to the logged one's size.
double relative(double got, double logged);
// The larger of two distances; NaN when either is, since a NaN distance (a NaN the trainer
// logged or committed) shows no agreement. std::max(x, NaN) would drop it.
double worse(double a, double b);

// The fields a step must have whatever the hardware, its inputs: tokens, hyperparameters, batch
// hash and RNG commitment, bit for bit. Throws the first difference.
void compare_inputs(const StepFields& got, const StepFields& logged);
// A replayed step against the logged one: its inputs (tokens, hyperparameters, batch hash, RNG
// commitment) bit for bit whatever the hardware; its outputs bit for bit, or with a tolerance
// the numeric ones within it (the worst distances kept in `seen`; the weight fingerprint, a hash
// of exact bits, is then left to the checkpoint comparison). Throws the first difference.
void compare_step(const StepFields& got, const StepFields& logged,
                  const std::optional<double>& tolerance, Distances& seen);

// A recomputed value against the logged one ("" when it passes): `what` names it ("eval after
// step 60, field value"). With a tolerance, a relative distance beyond it (the worst kept in
// `worst`); without, any differing bit.
std::string value_problem(const std::string& what, float got, float logged,
                          const std::optional<double>& tolerance, double& worst);

// Rank 0 alone sees some results (evaluations, fingerprints, exports): it tells every rank its
// `problem`, so that all of them leave the stage at the same point. `outputs` as in Mismatch.
void agree_with_root(dist::Communicator& comm, std::string problem, bool outputs = true);

}  // namespace wit::witness
