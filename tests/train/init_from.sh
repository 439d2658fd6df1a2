#!/usr/bin/env bash
# Starting from given weights (model.init_from): a run starts from another run's exported model,
# commits their SHA-256 (model.init_sha256) in its genesis, and certifies, the verifier taking the
# weights from the run's config.yaml or --init-from; weights that are missing or other are an
# error asking for them, never a certificate. A model saved by transformers (GPT2LMHeadModel,
# "transformer." names) starts a run too; one of another shape is refused naming the tensor.
# Usage: init_from.sh WIT_BINARY SOURCE_DIR
wit=$1 src=$2
source "$(dirname "$0")/setup.sh"
small=(--set data.dir="$work/data" --set model.n_layer=1 --set model.n_head=2 --set model.n_embd=32
       --set data.seq_len=32 --set train.micro_batch_size=4 --set train.eval_every=0 --set train.threads=1)
first_loss() { grep -m1 '"loss"' "$1/metrics.jsonl" | sed 's/.*"loss":\([0-9.e+-]*\).*/\1/'; }

"$wit" train "$src/configs/tiny.yaml" "${small[@]}" --set train.steps=40 --set train.checkpoint_every=20 \
  --out "$work/a" -q >/dev/null || fail "train a"
"$wit" train "$src/configs/tiny.yaml" "${small[@]}" --set train.steps=8 --set train.checkpoint_every=4 \
  --set model.init_from="$work/a" --out "$work/b" -q >/dev/null || fail "train b from a's model"
sha=$(sed -n 's/^ *init_sha256: *"\{0,1\}\([0-9a-f]\{64\}\)"\{0,1\}$/\1/p' "$work/b/config.yaml")
[ -n "$sha" ] || { cat "$work/b/config.yaml"; fail "b's config has no model.init_sha256"; }
/usr/bin/python3 -c 'import h5py, sys; y = h5py.File(sys.argv[1], "r")["meta"].attrs["committed_yaml"]; y = y.decode() if isinstance(y, bytes) else y; sys.exit(sys.argv[2] not in y or "init_from" in y)' \
  "$work/b/witness.h5" "$sha" || fail "the committed config does not hold the weights' hash (or holds their path)"
a0=$(first_loss "$work/a") b0=$(first_loss "$work/b")
/usr/bin/python3 -c "import sys; sys.exit(not float('$b0') < float('$a0') - 0.5)" ||
  fail "b's first loss $b0 is not well below a's $a0: it did not start from a's weights"
echo "b starts from a's model: first loss $b0 (a's was $a0), init_sha256 ${sha:0:16}"

"$wit" verify "$work/b" --key "$work/verifier.pem" >"$work/v1" 2>&1 || { cat "$work/v1"; fail "b is not certified"; }
grep -q CERTIFIED "$work/v1" || { cat "$work/v1"; fail "no CERTIFIED"; }
mv "$work/a" "$work/a-moved"
"$wit" verify "$work/b" --key "$work/verifier.pem" >"$work/v2" 2>&1 && fail "verified without the initial weights"
grep -q "give them with --init-from" "$work/v2" || { cat "$work/v2"; fail "no hint for --init-from"; }
grep -q "REJECTED" "$work/v2" && fail "missing weights rejected the run"
"$wit" verify "$work/b" --init-from "$work/a-moved/model.safetensors" --key "$work/verifier.pem" >"$work/v3" 2>&1 ||
  { cat "$work/v3"; fail "--init-from"; }
# Other weights of the same shape: an error, not a certificate and not a rejection.
"$wit" train "$src/configs/tiny.yaml" "${small[@]}" --set train.steps=2 --set train.checkpoint_every=0 \
  --set train.seed=7 --out "$work/other" -q >/dev/null || fail "train other"
"$wit" verify "$work/b" --init-from "$work/other" --key "$work/verifier.pem" >"$work/v4" 2>&1 &&
  fail "verified from other weights"
grep -q "is not the weights" "$work/v4" || { cat "$work/v4"; fail "other weights not named"; }
echo "verify: certified with the weights from config.yaml or --init-from; missing or other weights are an error"

# A model transformers saved, of the same shape, starts a run; another shape is refused.
"$python" - "$work/hf" <<'PY' || fail "transformers could not save a model"
import sys, torch
from transformers import GPT2Config, GPT2LMHeadModel
torch.manual_seed(0)
cfg = GPT2Config(vocab_size=257, n_positions=256, n_embd=32, n_layer=1, n_head=2,
                 activation_function="gelu_new", tie_word_embeddings=True,
                 bos_token_id=256, eos_token_id=256)
GPT2LMHeadModel(cfg).save_pretrained(sys.argv[1], safe_serialization=True)
PY
"$wit" train "$src/configs/tiny.yaml" "${small[@]}" --set train.steps=2 --set train.checkpoint_every=0 \
  --set model.init_from="$work/hf" --out "$work/c" -q >"$work/c.out" 2>&1 || { cat "$work/c.out"; fail "train from transformers' model"; }
out=$("$wit" train "$src/configs/tiny.yaml" "${small[@]}" --set model.n_embd=64 --set train.steps=2 \
  --set model.init_from="$work/hf" --out "$work/d" -q 2>&1) && fail "weights of another shape accepted"
grep -q "has shape" <<<"$out" || fail "another shape: $out"
[ ! -e "$work/d/config.yaml" ] || fail "a refused run left a config behind"
echo "init from: all passed"
