#!/usr/bin/env bash
# The Python snippet in docs/witness-format.md reads a real run's log with h5py, as documented.
# Usage: h5py_snippet.sh WIT_BINARY SOURCE_DIR
set -euo pipefail
wit=$1
src=$2
python=/usr/bin/python3   # Debian's, which has python3-h5py
$python -c "import h5py" || { echo "FAIL: python3-h5py is not installed (launch/install-deps)"; exit 1; }
work=$(mktemp -d /tmp/wit-h5py-XXXXXX)
trap 'rm -rf "$work"' EXIT
export WIT_SIGNING_KEY="$work/key.pem"
"$wit" prepare --out "$work/data" >/dev/null
"$wit" train "$src/configs/tiny.yaml" --set data.dir="$work/data" --set model.n_layer=1 \
  --set model.n_embd=32 --set model.n_head=2 --set train.steps=6 --set train.eval_every=3 \
  --set train.checkpoint_every=3 --out "$work/run" -q >/dev/null
# The block after the snippet marker, up to the closing fence.
sed -n '/<!-- snippet: read-witness/,/^```$/p' "$src/docs/witness-format.md" | sed '1,2d;$d' >"$work/snippet.py"
[ -s "$work/snippet.py" ] || { echo "FAIL: no snippet found in docs/witness-format.md"; exit 1; }
(echo "RUN = '$work/run'"; cat "$work/snippet.py") | $python - | tee "$work/out"
grep -q "^6 steps, last loss" "$work/out" || { echo "FAIL: unexpected output"; exit 1; }
grep -q "checkpoint after 6 steps: checkpoints/step_00000006.ckpt" "$work/out" || { echo "FAIL: checkpoints"; exit 1; }
echo "h5py reads the log as documented"
