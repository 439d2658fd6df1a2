#!/usr/bin/env bash
# wit's model.safetensors and config.json in transformers (PyPI, deps/venv): a tiny byte-level run
# and a GPT-2-vocabulary run are loaded with GPT2LMHeadModel; the logits after each prompt agree
# with `wit sample --logits` to 1e-5 and greedy decoding matches `wit sample --temperature 0`.
# Usage: hf_transformers.sh WIT_BINARY SOURCE_DIR
set -uo pipefail
wit=$1
src=$2
fail() { echo "FAIL: $*"; exit 1; }
python="$src/deps/venv/bin/python"
"$python" -c "import transformers" 2>/dev/null || fail "transformers (PyPI) is missing from deps/venv: run launch/install-deps"
work=$(mktemp -d /tmp/wit-hf-XXXXXX)
trap 'rm -rf "$work"' EXIT
export WIT_SIGNING_KEY="$work/key.pem" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
"$wit" keygen --out "$WIT_SIGNING_KEY" >/dev/null
"$wit" prepare --out "$work/bytes" >/dev/null || fail "prepare (bytes)"
"$wit" prepare --tokenizer gpt2 --out "$work/gpt2" >/dev/null || fail "prepare (gpt2)"
small=(--set model.n_layer=2 --set model.n_head=2 --set model.n_embd=64 --set model.context=64
       --set data.seq_len=32 --set train.steps=30 --set train.micro_batches=2
       --set train.micro_batch_size=4 --set train.eval_every=0 --set train.checkpoint_every=0)
"$wit" train "$src/configs/tiny.yaml" "${small[@]}" --set data.dir="$work/bytes" --out "$work/run-bytes" -q >/dev/null ||
  fail "train (bytes)"
"$wit" train "$src/configs/tiny.yaml" "${small[@]}" --set data.dir="$work/gpt2" --set model.vocab_size=50257 \
  --out "$work/run-gpt2" -q >/dev/null || fail "train (gpt2)"
for run in run-bytes run-gpt2; do
  [ -f "$work/$run/config.json" ] || fail "$run: no config.json beside model.safetensors"
  files=()
  i=0
  for prompt in "And God said" "In the beginning" "The LORD is my shepherd; I shall not"; do
    i=$((i + 1))
    "$wit" sample "$work/$run" -p "$prompt" -n 24 -t 0 --logits "$work/$run.$i.json" >/dev/null ||
      fail "$run: wit sample --logits"
    files+=("$work/$run.$i.json")
  done
  "$python" "$src/tests/text/hf_transformers.py" "$work/$run" "${files[@]}" || fail "$run differs in transformers"
done
echo "hf transformers: all passed"
