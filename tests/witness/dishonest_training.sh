#!/usr/bin/env bash
# Dishonest trainers that really train otherwise (tests/witness/dishonest.cpp: the trainer's own
# step, a well-formed log of the committed schedule, signed with the run's own key) are rejected
# by `wit verify`, and the reason names the first mismatching step and field. First, the liar
# with nothing changed must write exactly the log and model of `wit train`.
# Usage: dishonest_training.sh WIT_BINARY DISHONEST_BINARY SOURCE_DIR
source "$(dirname "$0")/verify_setup.sh"
"$wit" train "$cfg" "${sets[@]}" --out "$work/honest" -q >/dev/null || fail "train honest"
# A model trained elsewhere (another seed), which two liars pass off as this run's.
"$wit" train "$cfg" "${sets[@]}" --set train.seed=5 --out "$work/other" -q >/dev/null ||
  fail "train other"

verify "$work/honest" >"$work/honest.out" 2>&1 || { cat "$work/honest.out"; fail "honest run rejected"; }
rm -f "$work/honest/certificate.json"

# The genesis and every table's head: equal heads mean equal tables, row for row.
heads() {
  "$wit" inspect "$1" --json >"$work/inspect.json" || return 1
  python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print(j["genesis"], j["heads"])' \
    "$work/inspect.json"
}
rm -rf "$work/lie" && cp -r "$work/honest" "$work/lie"
"$liar" "$work/lie" "$WIT_SIGNING_KEY" honest >/dev/null || fail "honest: the liar failed"
want=$(heads "$work/honest") || fail "inspect honest"
got=$(heads "$work/lie") || fail "inspect the liar's honest run"
[ "$want" = "$got" ] || fail "the liar's honest run differs from wit train's: $got vs $want"
cmp -s "$work/honest/model.safetensors" "$work/lie/model.safetensors" ||
  fail "the liar's honest model differs from wit train's"
echo "liar honest: the log's heads and model.safetensors equal wit train's"

# Each lie: a fresh copy of the honest run, retrained by the dishonest trainer.
expect_rejected() {  # NAME EXPECTED_REASON ATTACK ARGS...
  local name=$1 reason=$2
  shift 2
  rm -rf "$work/lie" && cp -r "$work/honest" "$work/lie"
  "$liar" "$work/lie" "$WIT_SIGNING_KEY" "$@" >"$work/liar.out" 2>&1 ||
    { cat "$work/liar.out"; fail "$name: the dishonest trainer failed"; }
  check_rejected "$name" "$reason"
}
expect_rejected injected-sample "challenges: step 4, field loss" inject-sample 4
expect_rejected dropped-sample "challenges: step 7, field loss" drop-sample 7
expect_rejected reordered "challenges: step 5, field loss" reorder 5
expect_rejected held-out "challenges: step 10, field loss" held-out 10
expect_rejected fine-tuned "challenges: step 0, field loss" fine-tuned "$work/other"
# The Proof-of-Learning spoof logs step 0's honest loss and gradient: the weights it leaves give
# it away. What it publishes is the other run's model, byte for byte.
expect_rejected interpolated "challenges: step 0, field weight_fingerprint" interpolate "$work/other"
cmp -s "$work/other/model.safetensors" "$work/lie/model.safetensors" ||
  fail "interpolated: model.safetensors is not the other run's model"
echo "dishonest training: the liar's machinery is wit train's, every lie rejected"
