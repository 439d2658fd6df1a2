#!/usr/bin/env bash
# One rank throws mid-step: the whole job must exit non-zero within seconds, with the error on
# stderr, instead of leaving the other ranks waiting in a collective.
# Usage: rank_failure.sh WIT_BINARY SOURCE_DIR
set -uo pipefail
wit=$1
src=$2
work=$(mktemp -d /tmp/wit-fail-XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$wit" prepare --out "$work/data" >/dev/null || exit 1
start=$(date +%s)
WIT_INJECT_FAULT=1:2 timeout 60 mpirun --oversubscribe --bind-to none -np 2 "$wit" train \
  "$src/configs/tiny.yaml" --set model.n_layer=1 --set model.n_embd=32 --set model.n_head=2 \
  --set data.dir="$work/data" --set data.seq_len=16 --set train.steps=50 \
  --set train.micro_batches=2 --set train.micro_batch_size=2 --set train.threads=1 \
  --out "$work/run" -q >"$work/out" 2>&1
rc=$?
elapsed=$(( $(date +%s) - start ))
cat "$work/out"
if [ $rc -eq 0 ]; then echo "FAIL: the job exited 0"; exit 1; fi
if [ $rc -eq 124 ]; then echo "FAIL: the job hung (killed by timeout)"; exit 1; fi
grep -q "fault injected on rank 1 at step 2" "$work/out" || { echo "FAIL: no error message"; exit 1; }
echo "job exited $rc after ${elapsed}s"
[ $elapsed -le 30 ] || { echo "FAIL: took longer than 30s"; exit 1; }
echo "rank failure: job brought down"
