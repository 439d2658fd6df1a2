#!/usr/bin/env bash
# After K steps, the state (parameters, AdamW moments, step) is bitwise identical for 1, 2 and 4
# processes, DDP and FSDP, and for a run saved at 4 processes FSDP and resumed at 2 (DDP) and at 1.
# Checkpoints end with the canonical state hash (trainer/checkpoint.h): equal hashes, equal state.
# The witness logs agree too: the same record hashes (the chain heads of /steps, /fingerprints,
# /checkpoints and /evals), and each log verifies.
# Usage: world_size_invariance.sh WIT_BINARY SOURCE_DIR
set -euo pipefail
wit=$1
src=$2
work=$(mktemp -d /tmp/wit-world-XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpirun="mpirun --oversubscribe --bind-to none -np"
export WIT_SIGNING_KEY="$work/signing-key.pem"
"$wit" keygen --out "$WIT_SIGNING_KEY" >/dev/null

"$wit" prepare --out "$work/data" >/dev/null
sets=(--set model.n_layer=2 --set model.n_head=2 --set model.n_embd=32 --set model.context=32
      --set model.dropout=0.1 --set data.dir="$work/data" --set data.seq_len=16
      --set train.steps=6 --set train.micro_batches=4 --set train.micro_batch_size=2
      --set train.threads=1 --set train.checkpoint_every=3 --set train.eval_every=0
      --set train.log_every=1 --set witness.fingerprint_every=2
      --set optim.warmup_steps=1)
cfg="$src/configs/tiny.yaml"

"$wit" train "$cfg" "${sets[@]}" --out "$work/n1" -q >/dev/null
$mpirun 2 "$wit" train "$cfg" "${sets[@]}" --out "$work/n2" >"$work/n2.out"
# MFU divides the job's throughput by every process's peak, not by one's.
grep -q "MFU is measured against [0-9.]* GFLOP/s per process x 2 process(es)" "$work/n2.out" ||
  { cat "$work/n2.out"; echo "FAIL: MFU's peak is not per process"; exit 1; }
$mpirun 4 "$wit" train "$cfg" "${sets[@]}" --out "$work/n4" -q >/dev/null
$mpirun 2 "$wit" train "$cfg" "${sets[@]}" --set dist.mode=fsdp --out "$work/f2" -q >/dev/null
$mpirun 4 "$wit" train "$cfg" "${sets[@]}" --set dist.mode=fsdp --out "$work/f4" -q >/dev/null
# Saved at 4 processes FSDP after 3 steps, resumed at 2 DDP and at 1.
$mpirun 4 "$wit" train "$cfg" "${sets[@]}" --set dist.mode=fsdp --out "$work/r" --until 3 -q >/dev/null
cp -r "$work/r" "$work/r1"
$mpirun 2 "$wit" train --resume "$work/r" --set dist.mode=ddp -q >/dev/null
"$wit" train --resume "$work/r1" -q >/dev/null

final=checkpoints/step_00000006.ckpt
state() { tail -c 40 "$1" | od -An -tx1 | tr -d ' \n'; }
status=0
for run in n2 n4 f2 f4 r r1; do
  if [ "$(state "$work/n1/$final")" = "$(state "$work/$run/$final")" ] &&
     cmp -s "$work/n1/model.safetensors" "$work/$run/model.safetensors"; then
    echo "identical: $run"
  else
    echo "DIFFERS: $run vs n1"
    status=1
  fi
done
# The witness logs: same heads (hence the same rows), each one verified by `wit inspect`.
heads() { "$wit" inspect "$1" --json | sed -n '/"heads"/,/}/p' | tr -d ' \n'; }
ref=$(heads "$work/n1")
[ -n "$ref" ] || { echo "DIFFERS: no heads in n1's witness log"; status=1; }
for run in n2 n4 f2 f4 r r1; do
  if [ "$(heads "$work/$run")" = "$ref" ]; then
    echo "same witness chain: $run"
  else
    echo "DIFFERS: witness chain of $run vs n1"
    status=1
  fi
done
# The shared key (WIT_SIGNING_KEY) signed every log: a reader that trusts it accepts them all.
for run in n1 n2 n4 f2 f4 r r1; do
  "$wit" inspect "$work/$run" --key "$WIT_SIGNING_KEY.pub" >/dev/null ||
    { echo "DIFFERS: $run's witness log does not verify"; status=1; }
done
# The metrics agree too (loss, gradient norm, lr as logged), all but the timings (a checkpoint's
# timing line comes when its background write ends, or at once under fsdp).
strip() {
  sed -E 's/"(mfu|tokens_per_s|checkpoint_s|checkpoint_write_s)":[0-9.eE+-]+,?//g' "$1" |
    grep -Ev '^\{"step":[0-9]+,?\}$'
}
for run in n2 n4 f2 f4; do
  strip "$work/n1/metrics.jsonl" >"$work/a"
  strip "$work/$run/metrics.jsonl" >"$work/b"
  cmp -s "$work/a" "$work/b" && echo "same losses: $run" || { echo "LOSSES DIFFER: $run"; status=1; }
done
[ $status -eq 0 ] && echo "world-size invariance: all identical"
exit $status
