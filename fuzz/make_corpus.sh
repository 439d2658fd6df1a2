#!/usr/bin/env bash
# Makes the fuzz targets' seed corpus (fuzz/corpus/<target>/) from a real, tiny run: a witness
# log, a checkpoint, a model, a manifest, query proofs, a certificate and configs. The corpus is
# committed; run this again only when a format changes.
# Usage: fuzz/make_corpus.sh WIT_BINARY
set -euo pipefail
wit=$1
cd "$(dirname "$0")"
work=$(mktemp -d /tmp/wit-corpus-XXXXXX)
trap 'rm -rf "$work"' EXIT
export WIT_SIGNING_KEY="$work/key.pem"
"$wit" keygen --out "$work/verifier.pem" >/dev/null
mkdir -p "$work/docs"
for i in $(seq 1 12); do printf 'Document %d: %s\n' "$i" "$(seq -s ' ' 1 $((i * 3)))" >"$work/docs/d$i.txt"; done
"$wit" prepare "$work/docs" --format dir --val-fraction 0.25 --out "$work/data" >/dev/null
"$wit" train ../configs/tiny.yaml --set data.dir="$work/data" --set model.n_layer=1 \
  --set model.n_embd=8 --set model.n_head=2 --set model.context=8 --set data.seq_len=8 \
  --set train.steps=4 --set train.micro_batches=2 --set train.micro_batch_size=2 \
  --set train.checkpoint_every=2 --set train.eval_every=2 --set train.eval_batches=1 \
  --set witness.fingerprint_every=2 --set witness.probe_sequences=2 --out "$work/run" -q >/dev/null
"$wit" verify "$work/run" --key "$work/verifier.pem" -c 1 >/dev/null
"$wit" query "$work/run" --doc "$work/docs/d3.txt" --proof "$work/proof-doc.json" >/dev/null
printf 'absent\n' >"$work/absent.txt"
"$wit" query "$work/run" --doc "$work/absent.txt" --proof "$work/proof-absent.json" >/dev/null
rm -rf corpus && mkdir -p corpus/{log,checkpoint,safetensors,manifest,proof,certificate,config}
cp "$work/run/witness.h5" corpus/log/run.h5
cp "$work/run/checkpoints/step_00000002.ckpt" corpus/checkpoint/step2.ckpt
cp "$work/run/model.safetensors" corpus/safetensors/model.safetensors
cp "$work/data/manifest.h5" corpus/manifest/manifest.h5
cp "$work/proof-doc.json" "$work/proof-absent.json" corpus/proof/
cp "$work/run/certificate.json" corpus/certificate/certificate.json
cp ../configs/tiny.yaml corpus/config/tiny.yaml
/usr/bin/python3 - "$work/run/witness.h5" corpus/config/committed.yaml <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    open(sys.argv[2], "wb").write(f["meta"].attrs["committed_yaml"])
PY
du -sh corpus/*
