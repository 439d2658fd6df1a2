#!/usr/bin/env bash
# One rank throws mid-step: the whole job must exit non-zero within seconds, with the error on
# stderr, instead of leaving the other ranks waiting in a collective.
# The fault comes from a test program that runs the training loop with a hook (failing_rank.cpp).
# Usage: rank_failure.sh WIT_BINARY FAILING_RANK_BINARY SOURCE_DIR
set -uo pipefail
wit=$1
failing=$2
src=$3
work=$(mktemp -d /tmp/wit-fail-XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$wit" prepare --out "$work/data" >/dev/null || exit 1
start=$(date +%s)
timeout 60 mpirun --oversubscribe --bind-to none -np 2 "$failing" 1 2 \
  "$src/configs/tiny.yaml" "$work/run" model.n_layer=1 model.n_embd=32 model.n_head=2 \
  data.dir="$work/data" data.seq_len=16 train.steps=50 \
  train.micro_batches=2 train.micro_batch_size=2 train.threads=1 >"$work/out" 2>&1
rc=$?
elapsed=$(( $(date +%s) - start ))
cat "$work/out"
if [ $rc -eq 0 ]; then echo "FAIL: the job exited 0"; exit 1; fi
if [ $rc -eq 124 ]; then echo "FAIL: the job hung (killed by timeout)"; exit 1; fi
grep -q "fault injected on rank 1 at step 2" "$work/out" || { echo "FAIL: no error message"; exit 1; }
echo "job exited $rc after ${elapsed}s"
[ $elapsed -le 30 ] || { echo "FAIL: took longer than 30s"; exit 1; }
echo "rank failure: job brought down"
