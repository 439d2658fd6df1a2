#!/usr/bin/env bash
# The verifier's guarantee, measured: a run with a fraction g of its middle segments forged (the
# first and the last are always replayed), verified with c challenges drawn by many verifiers
# (seeds), is rejected at the rate 1 - (1 - g)^c, within a 99 % confidence interval. (A fraction
# f of forged steps outside the first and last segments makes at least a fraction f of the middle
# segments bad, so 1 - (1 - f)^c is the certificate's bound.)
# Usage: detection_rate.sh WIT_BINARY DISHONEST_BINARY SOURCE_DIR
source "$(dirname "$0")/verify_setup.sh"
# 8 segments of 2 steps, 6 of them in the middle; 2 of those forged (one step each): g = 1/3.
"$wit" train "$src/configs/tiny.yaml" --set data.dir="$work/data" --set model.n_layer=1 \
  --set model.n_head=2 --set model.n_embd=16 --set model.context=16 --set data.seq_len=8 \
  --set train.steps=16 --set train.micro_batches=1 --set train.micro_batch_size=2 \
  --set train.threads=1 --set train.checkpoint_every=2 --set train.eval_every=0 \
  --out "$work/run" -q >/dev/null || fail train
"$liar" "$work/run" "$WIT_SIGNING_KEY" forge-loss 5 12 >/dev/null || fail "forge"
trials=100 c=2
rejected=0
for seed in $(seq 1 $trials); do
  if "$wit" verify "$work/run" --key "$work/verifier.pem" -c $c --seed "$seed" >"$work/out" 2>&1; then
    grep -q "^CERTIFIED" "$work/out" || fail "seed $seed: neither certified nor rejected"
  else
    grep -Eq "REJECTED: challenges: step (5|12), field loss" "$work/out" ||
      { cat "$work/out"; fail "seed $seed: rejected for another reason"; }
    rejected=$((rejected + 1))
  fi
done
python3 - "$rejected" "$trials" "$c" <<'PY' || exit 1
import math, sys
rejected, n, c = map(int, sys.argv[1:])
g = 2 / 6
p = 1 - (1 - g) ** c
half = 2.576 * math.sqrt(p * (1 - p) / n)  # 99 % normal interval
rate = rejected / n
print(f"rejected {rejected} of {n} verifications: {rate:.3f}; 1 - (1 - {g})^{c} = {p:.3f} "
      f"(99 % interval {p - half:.3f} .. {p + half:.3f})")
if abs(rate - p) > half:
    print("FAIL: the detection rate is outside the interval")
    sys.exit(1)
print("detection rate: as the guarantee says")
PY
