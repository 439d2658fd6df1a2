#!/usr/bin/env bash
# Honest runs are certified when replayed on one process, whatever world size and layout trained
# them; each dishonest trainer (tests/witness/dishonest.cpp: a well-formed log, signed with the
# run's own key) is rejected, and the reason names the first mismatching step and field.
# Usage: dishonest_runs.sh WIT_BINARY DISHONEST_BINARY SOURCE_DIR
set -uo pipefail
wit=$1
liar=$2
src=$3
work=$(mktemp -d /tmp/wit-verify-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export WIT_SIGNING_KEY="$work/trainer.pem"
"$wit" keygen --out "$WIT_SIGNING_KEY" >/dev/null
"$wit" keygen --out "$work/verifier.pem" >/dev/null
"$wit" prepare --out "$work/data" >/dev/null || fail prepare
sets=(--set data.dir="$work/data" --set model.n_layer=2 --set model.n_head=2 --set model.n_embd=32
      --set model.context=32 --set model.dropout=0.1 --set data.seq_len=16 --set train.steps=12
      --set train.micro_batches=4 --set train.micro_batch_size=2 --set train.threads=1
      --set train.checkpoint_every=3 --set train.eval_every=6 --set witness.fingerprint_every=2)
cfg="$src/configs/tiny.yaml"
mpirun="mpirun --oversubscribe --bind-to none -np"
"$wit" train "$cfg" "${sets[@]}" --out "$work/n1" -q >/dev/null || fail "train n1"
$mpirun 2 "$wit" train "$cfg" "${sets[@]}" --out "$work/n2" -q >/dev/null || fail "train n2"
$mpirun 4 "$wit" train "$cfg" "${sets[@]}" --set dist.mode=fsdp --out "$work/f4" -q >/dev/null || fail "train f4"

verify() { "$wit" verify "$1" --key "$work/verifier.pem" --trainer-key "$WIT_SIGNING_KEY.pub" -c 40 "${@:2}"; }
for run in n1 n2 f4; do
  verify "$work/$run" >"$work/$run.out" 2>&1 || { cat "$work/$run.out"; fail "honest run $run rejected"; }
  grep -q "^CERTIFIED" "$work/$run.out" || fail "no CERTIFIED line for $run"
  "$wit" verify --check-certificate "$work/$run/certificate.json" >/dev/null || fail "certificate of $run"
  echo "honest $run: certified"
done

# Each lie: a fresh copy of the honest run, rewritten by the dishonest trainer.
expect_rejected() {  # NAME EXPECTED_REASON ATTACK ARGS...
  local name=$1 reason=$2
  shift 2
  rm -rf "$work/lie" && cp -r "$work/n1" "$work/lie" && rm -f "$work/lie/certificate.json"
  "$liar" "$work/lie" "$WIT_SIGNING_KEY" "$@" >/dev/null || fail "$name: the dishonest trainer failed"
  "$wit" inspect "$work/lie" >/dev/null || fail "$name: the forged log is not well-formed"
  if verify "$work/lie" >"$work/lie.out" 2>&1; then cat "$work/lie.out"; fail "$name was certified"; fi
  [ -f "$work/lie/certificate.json" ] && fail "$name: a certificate was written"
  grep -q "REJECTED: .*$reason" "$work/lie.out" || { cat "$work/lie.out"; fail "$name: expected '$reason'"; }
  echo "lie $name: $(grep REJECTED "$work/lie.out")"
}
expect_rejected misreported-lr "step 4, field lr" misreport-lr 4
expect_rejected misreported-clip "step 7, field grad_clip" misreport-clip 7
expect_rejected other-batch "step 5, field batch_hash" other-batch 5
expect_rejected forged-loss "step 8, field loss" forge-loss 8
expect_rejected skipped-step "step 10, field" skip 10
expect_rejected truncated "not complete: 9 of 12" truncate 9
expect_rejected inflated-eval "eval after step 12, field value" inflate-eval
expect_rejected claimed-other-init "step 0, field loss" claim-seed 77
other=$(tail -c 40 "$work/n2/checkpoints/step_00000006.ckpt" | head -c 32 | od -An -tx1 | tr -d ' \n')
rm -rf "$work/other" && "$wit" train "$cfg" "${sets[@]}" --set train.seed=5 --out "$work/other" -q >/dev/null
other=$(tail -c 40 "$work/other/checkpoints/step_00000006.ckpt" | head -c 32 | od -An -tx1 | tr -d ' \n')
rm -rf "$work/lie" && cp -r "$work/n1" "$work/lie"
cp "$work/other/checkpoints/step_00000006.ckpt" "$work/lie/checkpoints/step_00000006.ckpt"
"$liar" "$work/lie" "$WIT_SIGNING_KEY" splice-checkpoint 6 "$other" >/dev/null
if verify "$work/lie" >"$work/lie.out" 2>&1; then fail "a spliced checkpoint was certified"; fi
grep -Eq "REJECTED: (challenges|model).*(checkpoint|state|step 6)" "$work/lie.out" || { cat "$work/lie.out"; fail "spliced checkpoint: reason"; }
echo "lie spliced-checkpoint: $(grep REJECTED "$work/lie.out")"
# A log tampered with after signing, without the key.
rm -rf "$work/lie" && cp -r "$work/n1" "$work/lie"
/usr/bin/python3 - "$work/lie/witness.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    f["steps/loss"][3] = 0.5
PY
if verify "$work/lie" >"$work/lie.out" 2>&1; then fail "a tampered log was certified"; fi
grep -q "REJECTED: structure: steps row 3, field record_hash" "$work/lie.out" || { cat "$work/lie.out"; fail "tampered log: reason"; }
echo "tampered log: $(grep REJECTED "$work/lie.out")"
echo "verify: honest runs certified, every lie rejected"
