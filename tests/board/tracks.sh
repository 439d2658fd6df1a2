#!/usr/bin/env bash
# The shipped tracks (configs/board/tracks.yaml) name the datasets `wit prepare` makes of the
# built-in corpus, byte- and GPT-2-tokenized; a tiny run within the kjv-tiny track's rules may
# enter it and no other, and a run committed to too many tokens may not, with the reason.
# Usage: tracks.sh WIT_BINARY SOURCE_DIR
set -uo pipefail
wit=$1
src=$2
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d /tmp/wit-tracks-XXXXXX)
trap 'rm -rf "$work"' EXIT
tracks="$src/configs/board/tracks.yaml"
"$wit" board tracks "$tracks" >"$work/list" || fail "wit board tracks"
cat "$work/list"
"$wit" prepare --out "$work/kjv" >/dev/null || fail prepare
"$wit" prepare --tokenizer gpt2 --out "$work/kjv-gpt2" >/dev/null || fail "prepare --tokenizer gpt2"
for d in kjv kjv-gpt2; do
  entry=$("$wit" board dataset "$work/$d" | sed 's/^dataset: //') || fail "wit board dataset $d"
  grep -qF "dataset: $entry" "$tracks" || fail "no shipped track has the $d dataset: $entry"
done
echo "the shipped tracks name the built-in corpus as wit prepare makes it (byte and gpt2)"
export WIT_SIGNING_KEY="$work/key.pem"
"$wit" keygen --out "$WIT_SIGNING_KEY" >/dev/null
small=(--set data.dir="$work/kjv" --set model.n_layer=1 --set model.n_head=2 --set model.n_embd=32
       --set train.threads=1 --set train.checkpoint_every=0 --set train.eval_every=0
       --set witness.fingerprint_every=2)
"$wit" train "$src/configs/tiny.yaml" "${small[@]}" --set train.steps=2 --out "$work/ok" -q >/dev/null ||
  fail "train within the track"
"$wit" board tracks "$tracks" "$work/ok" >"$work/ok.out" || { cat "$work/ok.out"; fail "the run may enter no track"; }
grep -q "may enter kjv-tiny" "$work/ok.out" || fail "not in kjv-tiny"
grep -q "may not enter gpt2-124m-kjv: trained on dataset" "$work/ok.out" || fail "gpt2 track not refused"
"$wit" train "$src/configs/tiny.yaml" "${small[@]}" --set train.steps=5000 --until 2 --out "$work/big" -q \
  >/dev/null || fail "train a run committed to 5000 steps"
"$wit" board tracks "$tracks" "$work/big" >"$work/big.out" && fail "a run over the token budget may enter"
grep -q "may not enter kjv-tiny: 10240000 training tokens (5000 steps x 2048), over the track's budget" \
  "$work/big.out" || { cat "$work/big.out"; fail "no budget reason"; }
echo "a run within kjv-tiny's rules may enter it; one committed to 10.2M tokens may not"
echo "tracks: all passed"
