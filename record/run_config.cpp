#include "record/run_config.h"

#include "core/error.h"

namespace wit {

const config::Schema& run_schema() {
  static const config::Schema schema = [] {
    config::Schema s;
    s.add_int("model", "n_layer", 4, "transformer blocks", 1, 1024);
    s.add_int("model", "n_head", 4, "attention heads per block", 1, 1024);
    s.add_int("model", "n_embd", 256, "embedding width (divisible by n_head)", 1, 65536);
    s.add_int("model", "vocab_size", 257, "token vocabulary (>= the dataset's)", 2, 65536);
    s.add_int("model", "vocab_pad", 1,
              "round the embedding table up to a multiple of this many rows (64 or 128 suit GPU "
              "matmuls: GPT-2's 50257 becomes 50304 with 64); the extra rows are never a target. "
              "Committed when not 1",
              1, 4096);
    s.add_int("model", "context", 256, "maximum sequence length", 1, 65536);
    s.add_float("model", "dropout", 0.0, "dropout probability", 0.0, 0.99);
    s.add_string("model", "attention", "math",
                 "attention kernel: math (explicit softmax(QK^T/sqrt(d))V, every libtorch), flash "
                 "(scaled-dot-product attention's flash kernel: libtorch 2.x on CUDA with "
                 "train.precision=bf16 and model.dropout=0), auto (flash where it can run, else "
                 "math). Committed as resolved",
                 {"auto", "math", "flash"});
    s.add_string("model", "cross_entropy", "ops",
                 "the training loss's kernels: ops (log-softmax and negative log-likelihood as "
                 "libtorch operations, every device), fused (one pass over the logits forward and "
                 "one backward, in the logits' own precision: no fp32 copy of bf16 logits; CUDA "
                 "only). Committed when fused",
                 {"ops", "fused"});
    s.add_string("model", "layer_norm", "ops",
                 "the layer norms' kernels: ops (libtorch's layer norm, every device), fused (one "
                 "pass each way that writes the rows in the precision the next matmul reads: no "
                 "fp32 copy under bf16; CUDA only). Committed when fused",
                 {"ops", "fused"});
    s.add_string("model", "gelu", "ops",
                 "the MLP's bias add and GELU: ops (the bias in the matmul, then libtorch's GELU, "
                 "every device), fused (the matmul without its bias, then one pass each way that "
                 "adds the bias and applies the GELU, the bias's gradient summed in the same pass "
                 "back; CUDA only). Committed when fused",
                 {"ops", "fused"});

    s.add_string("model", "init_from", "",
                 "start from these weights instead of a random initialisation: a Hugging Face "
                 "GPT-2 model.safetensors (or the directory holding it; a wit run's exported "
                 "model is one) of this config's shape, read locally, never downloaded. Not "
                 "committed: the run commits the weights themselves (model.init_sha256)");
    s.add_string("model", "init_sha256", "",
                 "SHA-256 of the initial parameters (fp32 little-endian, in the canonical order) "
                 "when the run starts from model.init_from; wit train fills it in (a value given "
                 "must match), and the genesis commits to it");
    s.add_string("data", "dir", "data/kjv", "dataset directory made by `wit prepare`");
    s.add_int("data", "seq_len", 128, "tokens per training sequence (T <= context)", 1, 65536);
    s.add_int("data", "seed", 1, "seed of the sample order", 0, 9.2e18);

    s.add_int("train", "steps", 1000, "optimizer steps", 1, 1e12);
    s.add_string("train", "device", "auto",
                 "where the state and the step live: cpu; cuda (rank r uses GPU r mod the "
                 "visible GPUs; needs a libtorch built with CUDA); auto: cuda when this libtorch "
                 "has CUDA and a GPU is visible, else cpu. Not committed: a run's bits depend on "
                 "the device, and `wit verify` replays exactly only on the same one",
                 {"auto", "cpu", "cuda"});
    s.add_string("train", "precision", "fp32",
                 "matmul and attention precision: fp32, or bf16 (autocast, with fp32 master "
                 "weights, gradients and AdamW state; on CUDA). Committed",
                 {"fp32", "bf16"});
    s.add_int("train", "micro_batches", 1, "micro-batches per step (M)", 1, 1 << 20);
    s.add_int("train", "micro_batch_size", 8, "sequences per micro-batch (b)", 1, 1 << 20);
    s.add_int("train", "seed", 1, "run seed: init and dropout", 0, 9.2e18);
    s.add_int("train", "threads", 1, "intra-op CPU threads", 1, 1024);
    s.add_int("train", "log_every", 10, "steps between progress lines", 1, 1e12);
    s.add_int("train", "sample_every", 0,
              "steps between short text samples printed by rank 0, and one at the end (0: none); "
              "not committed: a sample draws from a generator of its own and changes nothing",
              0, 1e12);
    s.add_int("train", "eval_every", 100, "steps between val evaluations (0: end only)", 0, 1e12);
    s.add_int("train", "eval_batches", 8, "val micro-batches per evaluation", 1, 1 << 20);
    s.add_string("train", "choice_eval", "",
                 "a multiple-choice evaluation in HellaSwag's file format (JSON lines with ctx, "
                 "endings and label), scored at every val evaluation: accuracy by each ending's "
                 "total and by its per-token log-probability, committed like the val loss. Read "
                 "locally; not committed: the run commits the file itself "
                 "(train.choice_eval_sha256)");
    s.add_string("train", "choice_eval_sha256", "",
                 "SHA-256 of the train.choice_eval file; wit train fills it in (a value given "
                 "must match), and the genesis commits to it");
    s.add_int("train", "checkpoint_every", 100, "steps between checkpoints (0: end only)", 0, 1e12);
    s.add_bool("train", "activation_checkpointing", false,
               "keep only each block's input in the forward and recompute the block in the "
               "backward (its dropout replayed): activations of one block at a time instead of "
               "all, for about a third more compute. The same bits either way, so not committed "
               "and changeable on resume; fsdp always recomputes");

    s.add_float("optim", "lr", 6e-4, "peak learning rate", 0.0, 10.0);
    s.add_float("optim", "min_lr", 6e-5, "learning rate at the last step", 0.0, 10.0);
    s.add_int("optim", "warmup_steps", 0, "linear warmup steps", 0, 1e12);
    s.add_string("optim", "schedule", "cosine",
                 "learning rate after warmup: cosine or linear decay to min_lr at the last step, "
                 "or wsd (warmup-stable-decay: lr held, then a linear decay to min_lr over the "
                 "last optim.decay_fraction of the steps after warmup)",
                 {"cosine", "linear", "wsd"});
    s.add_float("optim", "decay_fraction", 0.2,
                "with optim.schedule = wsd: the share of the steps after warmup spent decaying",
                0.0, 1.0);
    s.add_float("optim", "weight_decay", 0.1, "decoupled weight decay", 0.0, 10.0);
    s.add_float("optim", "beta1", 0.9, "Adam beta1", 0.0, 0.999999);
    s.add_float("optim", "beta2", 0.95, "Adam beta2", 0.0, 0.999999);
    s.add_float("optim", "eps", 1e-8, "Adam epsilon", 0.0, 1.0);
    s.add_float("optim", "grad_clip", 1.0, "global gradient-norm clip (0: off)", 0.0, 1e9);
    s.add_string("optim", "kernels", "ops",
                 "how a GPU computes the gradient norm and the AdamW update: ops (libtorch "
                 "operations: the CPU's definitions to rounding), fused (one kernel each, whose "
                 "arithmetic is the CPU's: the same bits on the CPU and the GPU, NaN encodings "
                 "aside). The CPU computes its definitions either way. Committed when fused",
                 {"ops", "fused"});

    s.add_string("dist", "mode", "ddp",
                 "several processes: ddp (full state on every rank) or fsdp (sharded)",
                 {"ddp", "fsdp"});
    s.add_string("dist", "reduction", "canonical",
                 "how ddp sums gradients over ranks: canonical (one fixed tree, the same bits at "
                 "any world size: certifiable) or arrival (in the order ranks' messages reach "
                 "rank 0: the bits depend on timing, so `wit verify` reports the run as not "
                 "reproducible)",
                 {"canonical", "arrival"});

    s.add_int("witness", "fingerprint_every", 100,
              "steps between behavioural fingerprints (model outputs on the probe batch; "
              "also after the last step)",
              1, 1e12);
    s.add_int("witness", "probe_sequences", 4,
              "held-out sequences of data.seq_len tokens in the probe batch", 1, 4096);
    return s;
  }();
  return schema;
}

namespace {

// An optional committed SHA-256: empty, or 64 lowercase hex digits.
void check_sha256_hex(const char* key, const std::string& hex) {
  if (!hex.empty() &&
      (hex.size() != 64 || hex.find_first_not_of("0123456789abcdef") != std::string::npos))
    fail("{} = '{}' is not 64 lowercase hex digits", key, hex);
}

}  // namespace

RunConfig run_config_from(const config::Config& c) {
  RunConfig r;
  r.model.n_layer = c.get_int("model.n_layer");
  r.model.n_head = c.get_int("model.n_head");
  r.model.n_embd = c.get_int("model.n_embd");
  // The table's rows: the vocabulary rounded up to the padding.
  const int64_t pad = c.get_int("model.vocab_pad");
  r.model.vocab_size = (c.get_int("model.vocab_size") + pad - 1) / pad * pad;
  if (r.model.vocab_size > 65536)
    fail("model.vocab_size = {} padded to a multiple of model.vocab_pad = {} is {}, over 65536 "
         "(token ids are 16-bit)",
         c.get_int("model.vocab_size"), pad, r.model.vocab_size);
  r.model.context = c.get_int("model.context");
  r.model.dropout = c.get_float("model.dropout");
  r.model.attention = c.get_string("model.attention");
  r.model.cross_entropy = c.get_string("model.cross_entropy");
  r.model.layer_norm = c.get_string("model.layer_norm");
  r.model.gelu = c.get_string("model.gelu");
  r.init.from = c.get_string("model.init_from");
  r.init.sha256 = c.get_string("model.init_sha256");
  check_sha256_hex("model.init_sha256", r.init.sha256);
  r.train.device = c.get_string("train.device");
  r.train.precision = c.get_string("train.precision");
  r.data.dir = c.get_string("data.dir");
  r.data.seq_len = c.get_int("data.seq_len");
  r.data.seed = uint64_t(c.get_int("data.seed"));
  r.train.steps = c.get_int("train.steps");
  r.train.micro_batches = c.get_int("train.micro_batches");
  r.train.micro_batch_size = c.get_int("train.micro_batch_size");
  r.train.seed = uint64_t(c.get_int("train.seed"));
  r.train.threads = c.get_int("train.threads");
  r.train.log_every = c.get_int("train.log_every");
  r.train.sample_every = c.get_int("train.sample_every");
  r.train.eval_every = c.get_int("train.eval_every");
  r.train.activation_checkpointing = c.get_bool("train.activation_checkpointing");
  r.train.eval_batches = c.get_int("train.eval_batches");
  r.train.checkpoint_every = c.get_int("train.checkpoint_every");
  r.train.choice_eval = c.get_string("train.choice_eval");
  r.train.choice_eval_sha256 = c.get_string("train.choice_eval_sha256");
  check_sha256_hex("train.choice_eval_sha256", r.train.choice_eval_sha256);
  r.optim.lr = c.get_float("optim.lr");
  r.optim.min_lr = c.get_float("optim.min_lr");
  r.optim.warmup_steps = c.get_int("optim.warmup_steps");
  const std::string schedule = c.get_string("optim.schedule");
  r.optim.schedule = schedule == "linear" ? optim::Schedule::Linear
                     : schedule == "wsd"  ? optim::Schedule::Wsd
                                          : optim::Schedule::Cosine;
  r.optim.decay_fraction = c.get_float("optim.decay_fraction");
  r.optim.weight_decay = c.get_float("optim.weight_decay");
  r.optim.beta1 = c.get_float("optim.beta1");
  r.optim.beta2 = c.get_float("optim.beta2");
  r.optim.eps = c.get_float("optim.eps");
  r.optim.grad_clip = c.get_float("optim.grad_clip");
  r.optim.kernels = c.get_string("optim.kernels");
  r.dist_mode = c.get_string("dist.mode");
  r.dist_reduction = c.get_string("dist.reduction");
  r.witness.fingerprint_every = c.get_int("witness.fingerprint_every");
  r.witness.probe_sequences = c.get_int("witness.probe_sequences");

  if (r.model.n_embd % r.model.n_head != 0)
    fail("model.n_embd = {} must be divisible by model.n_head = {}", r.model.n_embd,
         r.model.n_head);
  if (r.data.seq_len > r.model.context)
    fail("data.seq_len = {} exceeds model.context = {}", r.data.seq_len, r.model.context);
  if (r.optim.min_lr > r.optim.lr)
    fail("optim.min_lr = {} exceeds optim.lr = {}", r.optim.min_lr, r.optim.lr);
  if (r.dist_reduction == "arrival" && r.dist_mode != "ddp")
    fail("dist.reduction = arrival needs dist.mode = ddp (sharded training sums canonically)");
  if (r.data.dir.empty()) fail("data.dir is empty: name a directory made by `wit prepare`");
  return r;
}

std::string committed_yaml(const config::Config& c) {
  std::vector<std::string> exclude = resume_mutable_keys();
  // The canonical reduction gives the same bits at any world size; another one is part of the
  // trajectory.
  if (c.get_string("dist.reduction") == "canonical") exclude.push_back("dist.reduction");
  // fp32 and the math attention are what a key left out means (every run before the keys
  // existed trained so); the others are part of the trajectory. An unresolved "auto" is never
  // committed: the trainer resolves it first (trainer/compute.h).
  if (c.get_string("train.precision") == "fp32") exclude.push_back("train.precision");
  // No padding is what a config without the key means; so is a random initialisation.
  if (c.get_int("model.vocab_pad") == 1) exclude.push_back("model.vocab_pad");
  if (c.get_string("model.init_sha256").empty()) exclude.push_back("model.init_sha256");
  if (c.get_string("train.choice_eval_sha256").empty())
    exclude.push_back("train.choice_eval_sha256");
  const std::string& attention = c.get_string("model.attention");
  WIT_CHECK(attention != "auto", "model.attention = auto must be resolved before it is committed");
  if (attention == "math") exclude.push_back("model.attention");
  // ATen's cross-entropy, layer norm and GELU, and the optimizer as libtorch operations, are what
  // every run before the keys trained with.
  if (c.get_string("model.cross_entropy") == "ops") exclude.push_back("model.cross_entropy");
  if (c.get_string("model.layer_norm") == "ops") exclude.push_back("model.layer_norm");
  if (c.get_string("model.gelu") == "ops") exclude.push_back("model.gelu");
  if (c.get_string("optim.kernels") == "ops") exclude.push_back("optim.kernels");
  // The cosine schedule is what the keys left out mean (every run before them had it); the decay
  // fraction is part of the trajectory only under wsd.
  if (c.get_string("optim.schedule") == "cosine") exclude.push_back("optim.schedule");
  if (c.get_string("optim.schedule") != "wsd") exclude.push_back("optim.decay_fraction");
  return c.to_yaml(exclude);
}

config::Config parse_committed(const std::string& yaml, const std::string& origin) {
  config::Config c = config::Config::parse(yaml, origin, run_schema());
  if (c.get_string("model.attention") == "auto")
    fail("{}: model.attention = auto in a committed config: a run commits the kernel it used",
         origin);
  if (committed_yaml(c) != yaml)
    fail(
        "{}: the committed config is not in canonical form (a key is missing, extra, out of "
        "order or written differently from how wit writes it)",
        origin);
  return c;
}

const std::vector<std::string>& resume_mutable_keys() {
  static const std::vector<std::string> keys = {"data.dir", "dist.mode", "train.log_every",
                                                "train.sample_every", "train.device",
                                                "train.activation_checkpointing",
                                                "model.init_from", "train.choice_eval"};
  return keys;
}

}  // namespace wit
