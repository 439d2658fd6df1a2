#!/usr/bin/env bash
# `wit sample` and train.sample_every, end to end: a tiny byte-level run and a tiny
# GPT-2-tokenized one (configs/gpt2-124m-kjv.yaml at tiny shapes) generate text; greedy and
# seeded draws repeat exactly; samples while training leave the witness chain as it was; bad
# requests and a tokenizer wit does not know are refused with messages.
# Usage: sample.sh WIT_BINARY SOURCE_DIR
set -uo pipefail
wit=$1
src=$2
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d /tmp/wit-sample-XXXXXX)
trap 'rm -rf "$work"' EXIT
export WIT_SIGNING_KEY="$work/key.pem"
"$wit" keygen --out "$WIT_SIGNING_KEY" >/dev/null
heads() { "$wit" inspect "$1" --json | sed -n '/"heads"/,/}/p' | tr -d ' \n'; }
tiny=(--set model.n_layer=2 --set model.n_head=2 --set model.n_embd=32 --set model.context=32
      --set data.seq_len=16 --set train.steps=6 --set train.micro_batches=2
      --set train.micro_batch_size=2 --set train.eval_every=3 --set train.checkpoint_every=3
      --set train.eval_batches=1 --set witness.fingerprint_every=3)

"$wit" prepare --out "$work/bytes" >/dev/null || fail "prepare (byte)"
"$wit" train "$src/configs/tiny.yaml" "${tiny[@]}" --set data.dir="$work/bytes" --out "$work/b" -q >/dev/null ||
  fail "train (byte)"
"$wit" sample "$work/b" -p "And God said" -n 40 -t 0 >"$work/s1" || fail "greedy sample"
"$wit" sample "$work/b" -p "And God said" -n 40 -t 0 >"$work/s2"
cmp -s "$work/s1" "$work/s2" || fail "greedy samples differ"
[ "$(head -c 12 "$work/s1")" = "And God said" ] || fail "the sample does not start with the prompt"
"$wit" sample "$work/b" -n 40 --seed 5 -k 20 >"$work/s3" && "$wit" sample "$work/b" -n 40 --seed 5 -k 20 >"$work/s4" ||
  fail "seeded sample"
cmp -s "$work/s3" "$work/s4" || fail "the same seed gave different text"
"$wit" sample "$work/b" --checkpoint 3 -n 10 --stats 2>"$work/stats" >/dev/null || fail "sample from a checkpoint"
grep -q "tokens/s" "$work/stats" || fail "no --stats line"
echo "byte run: greedy and seeded samples repeat; a checkpoint samples too"

expect_error() {  # PATTERN COMMAND...
  local pattern=$1 out
  shift
  out=$("$@" 2>&1) && fail "succeeded: $*"
  grep -q "$pattern" <<<"$out" || fail "no '$pattern' from: $* -> $out"
}
long=$(printf 'x%.0s' $(seq 40))
expect_error "longer than the model's context of 32" "$wit" sample "$work/b" -p "$long"
expect_error "temperature -1" "$wit" sample "$work/b" --temperature -1
expect_error "top-k 100000" "$wit" sample "$work/b" --top-k 100000
expect_error "tokens 0" "$wit" sample "$work/b" --tokens 0
expect_error "not a run directory" "$wit" sample "$work"
expect_error "does not exist" "$wit" sample "$work/b" --checkpoint 4
echo "bad requests refused with messages"

# GPT-2 tokens: the shipped config at tiny shapes, with samples while training.
"$wit" prepare --tokenizer gpt2 --out "$work/gpt2" >/dev/null || fail "prepare --tokenizer gpt2"
cfg="$src/configs/gpt2-124m-kjv.yaml"
"$wit" train "$cfg" "${tiny[@]}" --set data.dir="$work/gpt2" --set train.sample_every=3 \
  --out "$work/g" >"$work/g.out" || { cat "$work/g.out"; fail "train (gpt2) with samples"; }
[ "$(grep -c "| sample:" "$work/g.out")" = 2 ] || { cat "$work/g.out"; fail "not a sample at steps 3 and 6"; }
"$wit" train "$cfg" "${tiny[@]}" --set data.dir="$work/gpt2" --out "$work/g0" -q >/dev/null || fail "train (gpt2)"
[ "$(heads "$work/g")" = "$(heads "$work/g0")" ] || fail "samples while training changed the chain"
"$wit" sample "$work/g" -p "In the beginning" -n 20 >/dev/null || fail "sample (gpt2)"
echo "gpt2 run: samples at steps 3 and 6, the same chain as without; wit sample decodes GPT-2 tokens"

# A run on llm.c shards (tokenized outside wit): sampling asks which tokenizer it was.
"$wit" prepare "$work/gpt2/train_000000.bin" --format llmc --out "$work/llmc" >/dev/null || fail "prepare llmc"
sed "s|dir: .*|dir: $work/llmc|" "$work/g/config.yaml" >"$work/g/config.external" &&
  cp "$work/g/config.yaml" "$work/g/config.gpt2" && cp "$work/g/config.external" "$work/g/config.yaml"
expect_error "tokenized outside wit" "$wit" sample "$work/g"
"$wit" sample "$work/g" --tokenizer gpt2 -n 5 >/dev/null || fail "--tokenizer gpt2 on external data"
echo "external tokens: refused without --tokenizer, sampled with it"
echo "sample: all passed"
