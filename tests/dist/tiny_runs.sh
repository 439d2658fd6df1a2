# Sourced by the multi-host and Slurm tests (after $wit and $work are set): the tiny run they
# train in several ways, and how they read a run's witness log.
#   tiny_sets DATA_DIR   fills the array `sets` with the tiny run's --set options
#   heads RUN            the log's chain heads, on one line (equal heads: the same chain)
#   steps_of RUN         steps the log records so far (empty while there is no log)
tiny_sets() {
  sets=(--set data.dir="$1" --set model.n_layer=2 --set model.n_head=2 --set model.n_embd=32
        --set model.context=32 --set model.dropout=0.1 --set data.seq_len=16 --set train.steps=6
        --set train.micro_batches=4 --set train.micro_batch_size=2 --set train.threads=1
        --set train.checkpoint_every=3 --set train.eval_every=3 --set witness.fingerprint_every=2)
}
heads() { "$wit" inspect "$1" --json | sed -n '/"heads"/,/}/p' | tr -d ' \n'; }
steps_of() { "$wit" inspect "$1" --json 2>/dev/null | sed -n 's/^  "steps": \([0-9]*\),$/\1/p'; }
