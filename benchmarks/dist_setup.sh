# Sourced by the distributed benchmark scripts (argument: DATA_DIR): the data (prepared if
# missing), the benchmark binary, mpirun, and the two configs of docs/benchmarks.md:
#   compute  a config where compute dominates (scaling);
#   state    one where parameters and AdamW state dominate (memory).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
data=${1:-data/kjv}
build=${WIT_BUILD_DIR:-build}
bench=$build/benchmarks/wit_bench_dist_step
[ -f "$data/manifest.h5" ] || $build/apps/wit/wit prepare --out "$data"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun="mpirun --oversubscribe --bind-to core -np"
compute=(--set model.n_layer=4 --set model.n_head=8 --set model.n_embd=512 --set model.context=128
         --set data.seq_len=128 --set train.micro_batches=2 --set train.micro_batch_size=8
         --set train.threads=1)
state=(--set model.n_layer=12 --set model.n_head=16 --set model.n_embd=1024 --set model.context=32
       --set data.seq_len=32 --set train.micro_batches=2 --set train.micro_batch_size=2
       --set train.threads=1)
