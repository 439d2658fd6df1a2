#!/usr/bin/env bash
# wit's model.safetensors, config.json and tokenizer files in transformers (PyPI, deps/venv): a
# tiny byte-level run (its table padded to 320 rows by model.vocab_pad) and a GPT-2-vocabulary run
# are loaded with GPT2LMHeadModel; the logits after each prompt agree with `wit sample --logits`
# to 1e-5 and greedy decoding matches `wit sample --temperature 0`. Their tokenizers, loaded with
# AutoTokenizer and GPT2Tokenizer, encode texts (English, whitespace runs, accents, CJK, emoji,
# contractions, numbers) to the ids `wit tokenize` gives and decode them back; the GPT-2 run's
# vocab.json and merges.txt are GPT-2's released encoder.json and vocab.bpe, byte for byte.
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
"$wit" train "$src/configs/tiny.yaml" "${small[@]}" --set data.dir="$work/bytes" --set model.vocab_pad=64 \
  --out "$work/run-bytes" -q >/dev/null || fail "train (bytes)"
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
grep -q '"vocab_size": 320' "$work/run-bytes/config.json" || fail "model.vocab_pad=64: config.json does not say 320 rows"
/usr/bin/python3 -c 'import h5py, sys; y = h5py.File(sys.argv[1], "r")["meta"].attrs["committed_yaml"]; sys.exit("vocab_pad: 64" not in (y.decode() if isinstance(y, bytes) else y))' \
  "$work/run-bytes/witness.h5" || fail "model.vocab_pad=64 is not in the committed config"

printf 'And God said, Let there be light: and there was light.\n' >"$work/t1.txt"
printf '  several   spaces\tand tabs\n\n\nblank lines   \n' >"$work/t2.txt"
printf 'naïve café — “quotes” 日本語のテキスト 🎉🚀 Ünïcödé\n' >"$work/t3.txt"
printf "don't we'll I'm you've 12345 3.14159 \$%%^&*() x=y+z\n" >"$work/t4.txt"
for tok in bytes gpt2; do
  for f in vocab.json merges.txt tokenizer_config.json special_tokens_map.json; do
    [ -f "$work/run-$tok/$f" ] || fail "run-$tok: no $f beside model.safetensors"
  done
  args=()
  for i in 1 2 3 4; do
    "$wit" tokenize --tokenizer "${tok%s}" "$work/t$i.txt" >"$work/$tok.$i.ids" || fail "wit tokenize ($tok)"
    args+=("$work/t$i.txt" "$work/$tok.$i.ids")
  done
  "$python" "$src/tests/text/hf_tokenizer.py" "$work/run-$tok" "${args[@]}" || fail "the $tok tokenizer differs in transformers"
done
# GPT-2's released files (their SHA-256, as published with the vocabulary).
[ "$(sha256sum <"$work/run-gpt2/vocab.json" | cut -d' ' -f1)" = 196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783 ] ||
  fail "vocab.json is not GPT-2's encoder.json"
[ "$(sha256sum <"$work/run-gpt2/merges.txt" | cut -d' ' -f1)" = 1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5 ] ||
  fail "merges.txt is not GPT-2's vocab.bpe"
echo "hf transformers: all passed"
