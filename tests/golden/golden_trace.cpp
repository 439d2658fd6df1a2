// The golden trace: a 20-step run of a tiny model (dropout on, four micro-batches), printed as
// the exact bits of every step's loss, a hash of the final weights, the head of the step
// records' hash chain and the final state hash. Run it at any world size and layout
// (mpirun -np N golden_trace DATA ddp|fsdp CONFIG [staged]); golden_trace.sh compares the output
// with golden_trace.expected, recorded from the trainer as it was. Any change that alters one
// bit of a step shows here, and must update the expected file in a commit of its own saying why.
#include <fmt/format.h>

#include <cstring>

#include "core/error.h"
#include "core/sha256.h"
#include "trainer/batch.h"
#include "trainer/data/dataset.h"
#include "trainer/device_comm.h"
#include "trainer/dist/mpi_communicator.h"
#include "trainer/layout.h"
#include "trainer/run_plan.h"
#include "record/run_config.h"
#include "trainer/runtime.h"
#include "trainer/witnessing.h"
#include "record/format.h"
#include "trainer/cpu_numerics.h"

namespace wit {
namespace {

int run(const std::string& data_dir, const std::string& mode, const std::string& config_file,
        bool staged) {
  auto world = dist::make_communicator();
  // staged: every buffer through HostStagedCommunicator, as device buffers go on a GPU shared
  // by several ranks; the bits must not change.
  std::unique_ptr<dist::Communicator> staging;
  if (staged) staging = std::make_unique<HostStagedCommunicator>(*world, torch::kCPU, true);
  dist::Communicator* comm = staging ? staging.get() : world.get();
  const auto cfg = config::Config::load(
      config_file, run_schema(),
      {"data.dir=" + data_dir, "model.dropout=0.1", "train.steps=20", "train.micro_batches=4",
       "train.micro_batch_size=4", "train.threads=1", "optim.warmup_steps=4",
       "dist.mode=" + mode});
  const RunConfig rc = run_config_from(cfg);
  set_compute_threads(1);
  const auto dataset = data::Dataset::open(rc.data.dir);
  const RunPlan plan(rc, dataset);
  auto layout = make_layout(rc.dist_mode, rc.model, rc.train.micro_batches, *comm);
  layout->init(init_seed(rc.train.seed));
  witness::PublicKey key{};  // a fixed key: the genesis commits to it
  for (size_t i = 0; i < key.size(); ++i) key[i] = uint8_t(i);
  const Digest genesis =
      witness::genesis_hash(committed_yaml(cfg), dataset.manifest().root,
                            data::layout_digest(dataset.manifest()),
                            uint64_t(layout->num_params()), key);
  Digest head = genesis;
  std::string out;
  while (layout->steps_done() < rc.train.steps) {
    const StepRecord rec = train_step(*layout, plan.context());
    uint32_t bits;
    std::memcpy(&bits, &rec.loss, sizeof bits);
    out += fmt::format("step {:2d} loss {:08x}\n", rec.step, bits);
    head = witness::record_hash(head, step_fields(rec));
  }
  const torch::Tensor params = layout->full_params().contiguous();
  const Digest state = layout->state_hash(genesis);
  if (!comm->is_root()) return 0;
  out += fmt::format("weights {}\n", to_hex(sha256(params.data_ptr<float>(),
                                                    size_t(params.numel()) * sizeof(float))));
  out += fmt::format("step_head {}\n", to_hex(head));
  out += fmt::format("state {}\n", to_hex(state));
  fmt::print("{}", out);
  return 0;
}

}  // namespace
}  // namespace wit

int main(int argc, char** argv) {
  wit::pin_cpu_numerics(argv);  // first: the libraries must load with it
  try {
    if (argc != 4 && !(argc == 5 && std::string(argv[4]) == "staged"))
      wit::fail("usage: golden_trace DATA_DIR ddp|fsdp TINY_CONFIG [staged]");
    return wit::run(argv[1], argv[2], argv[3], argc == 5);
  } catch (const std::exception& e) {
    fmt::print(stderr, "golden_trace: {}\n", e.what());
    return 1;
  }
}
