#!/usr/bin/env bash
# `wit query` on a real run: documents found at the steps the schedule says, proofs written and
# checked alone, a damaged or foreign proof rejected, the contamination report, and bad input.
# Usage: query_cli.sh WIT_BINARY SOURCE_DIR
set -uo pipefail
wit=$1
src=$2
work=$(mktemp -d /tmp/wit-query-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export WIT_SIGNING_KEY="$work/key.pem"
mkdir -p "$work/corpus"
for i in $(seq 1 40); do
  { echo "Document $i."; for k in $(seq 1 $((i % 9 + 1))); do echo "line $k of document $i, with some words"; done; } >"$work/corpus/doc$i.txt"
done
"$wit" prepare "$work/corpus" --format dir --val-fraction 0.2 --out "$work/data" >/dev/null || fail "prepare"
# Enough steps for every training document to come up, at least once.
"$wit" train "$src/configs/tiny.yaml" --set data.dir="$work/data" --set model.n_layer=1 \
  --set model.n_embd=32 --set model.n_head=2 --set data.seq_len=16 --set train.steps=60 \
  --set train.micro_batches=2 --set train.micro_batch_size=4 --set train.eval_every=0 \
  --set train.checkpoint_every=0 --out "$work/run" --until 30 -q >/dev/null || fail "train"
signed_head() { "$wit" inspect "$1" --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["signed_head"]["hash"])'; }
# A proof made half-way, before the run went on: valid for that head only.
first_doc=$(ls "$work"/corpus/*.txt | head -1)
"$wit" query "$work/run" --doc "$first_doc" --proof "$work/early.json" >/dev/null || fail "query half-way"
# Half-way, the answers say where they end: 30 of the 60 steps planned.
"$wit" query "$work/run" --doc "$first_doc" --json | grep -q '"complete":false.*"steps":30\|"steps":30.*"complete":false' ||
  fail "a half-way answer does not say it ends early"
early_head=$(signed_head "$work/run")
"$wit" train --resume "$work/run" -q >/dev/null || fail "resume"
root=$("$wit" inspect "$work/run" --json | sed -n 's/^  "manifest_root": "\([0-9a-f]*\)",$/\1/p')
[ ${#root} -eq 64 ] || fail "no manifest root from wit inspect"
genesis=$("$wit" inspect "$work/run" --json | sed -n 's/^  "genesis": "\([0-9a-f]*\)",$/\1/p')
[ ${#genesis} -eq 64 ] || fail "no genesis from wit inspect"
head=$(signed_head "$work/run")
[ ${#head} -eq 64 ] && [ "$head" != "$early_head" ] || fail "no new signed head after the resume"
run_id=(--root "$root" --genesis "$genesis" --head "$head")
"$wit" query --check-proof "$work/early.json" --root "$root" --genesis "$genesis" --head "$early_head" >/dev/null ||
  fail "a half-way proof rejected against its own head"
out=$("$wit" query --check-proof "$work/early.json" "${run_id[@]}") && fail "a stale proof passed for the finished run"
grep -q "a proof made before the run went on" <<<"$out" || fail "the stale proof is not explained: $out"
echo "stale proof refused: $out"

# Every document file: one answer each; the included ones with steps, the others held out.
"$wit" query "$work/run" $(for f in "$work"/corpus/*.txt; do echo --doc "$f"; done) --json >"$work/answers.jsonl" || fail "query"
[ "$(wc -l <"$work/answers.jsonl")" -eq 40 ] || fail "expected 40 answers"
grep -c '"verdict":"included"' "$work/answers.jsonl"
grep -q '"verdict":"held-out"' "$work/answers.jsonl" || fail "no held-out document among 40 at val fraction 0.2"
grep -Eq '"verdict":"(not-in-dataset|empty)"' "$work/answers.jsonl" && fail "a prepared document was not found"

inc=$(grep -l . "$work"/corpus/*.txt | while read -r f; do
  grep -q '^included' <<<"$("$wit" query "$work/run" --doc "$f")" && { echo "$f"; break; }; done)
[ -n "$inc" ] || fail "no included document"
"$wit" query "$work/run" --doc "$inc" --proof "$work/inc.json" | tee "$work/inc.txt"
grep -q "step " "$work/inc.txt" || fail "an included answer without steps"
"$wit" query --check-proof "$work/inc.json" "${run_id[@]}" || fail "a valid inclusion proof rejected"

printf 'a document nobody wrote\n' >"$work/stranger.txt"
grep -q "^not-in-dataset" <<<"$("$wit" query "$work/run" --doc "$work/stranger.txt" --proof "$work/out.json")" || fail "stranger found"
"$wit" query --check-proof "$work/out.json" "${run_id[@]}" || fail "a valid exclusion proof rejected"
# A proof is about the hash it names: with --doc, it must be the asker's document's.
"$wit" query --check-proof "$work/inc.json" "${run_id[@]}" --doc "$inc" | grep -q "^valid    $inc (hashed as text) included" ||
  fail "the inclusion proof is not about its document"
cp "$inc" "$work/same.txt"  # two files, one content: one proof is about both
"$wit" query --check-proof "$work/inc.json" "${run_id[@]}" --doc "$inc" --doc "$work/same.txt" >/dev/null ||
  fail "a proof about two files of the same content"
out=$("$wit" query --check-proof "$work/out.json" "${run_id[@]}" --doc "$inc") && fail "a proof of another document passed for $inc"
grep -q "about none of the documents given with --doc" <<<"$out" || fail "the other document's proof is not named: $out"
grep -q "^MISSING  $inc: no proof" <<<"$out" || fail "the missing proof is not named: $out"
out=$("$wit" query "$work/run" --check-proof "$work/out.json" "${run_id[@]}" 2>&1) && fail "--check-proof took a run directory"
grep -q "not a run directory" <<<"$out" || fail "--check-proof with a run: $out"

# A damaged proof, and a proof checked against another root or run.
sed 's/"index": \([0-9]\)/"index": 1\1/' "$work/inc.json" >"$work/bad.json"
cmp -s "$work/inc.json" "$work/bad.json" && fail "could not damage the proof"
"$wit" query --check-proof "$work/bad.json" "${run_id[@]}" >"$work/bad.txt" && fail "a damaged proof passed"
grep -q INVALID "$work/bad.txt" || fail "no INVALID line"
other=$(printf '%064d' 7)
"$wit" query --check-proof "$work/inc.json" --root "$other" --genesis "$genesis" --head "$head" >/dev/null && fail "a proof passed for another root"
"$wit" query --check-proof "$work/inc.json" --root "$root" --genesis "$other" --head "$head" >/dev/null && fail "a proof passed for another run"
grep -q "needs the run it is about" <<<"$("$wit" query --check-proof "$work/inc.json" --root "$root" 2>&1)" || fail "a proof checked against a root alone"
grep -q "needs the run it is about" <<<"$("$wit" query --check-proof "$work/inc.json" --root "$root" --genesis "$genesis" 2>&1)" ||
  fail "a proof checked without the run's head"

# A log whose chain is broken answers nothing.
cp -r "$work/run" "$work/broken-run"
/usr/bin/python3 - "$work/broken-run/witness.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    f["steps/loss"][3] = 0.5
PY
"$wit" query "$work/broken-run" --doc "$inc" >"$work/broken.out" 2>&1 && { cat "$work/broken.out"; fail "a broken log was answered"; }
grep -q "does not verify" "$work/broken.out" || { cat "$work/broken.out"; fail "broken log: message"; }

# The contamination report: every held-out document excluded, with proofs.
"$wit" query "$work/run" --split val --proof "$work/val.json" | tee "$work/val.txt"
grep -q "^no contamination" "$work/val.txt" || fail "contamination report"
"$wit" query --check-proof "$work/val.json" "${run_id[@]}" >/dev/null || fail "held-out proofs rejected"

# Bad input: clear errors, non-zero exits, never a wrong "excluded".
: >"$work/empty.txt"
grep -q "^empty" <<<"$("$wit" query "$work/run" --doc "$work/empty.txt")" || fail "empty file"
head -c 3000 /dev/urandom >"$work/binary.bin"
grep -q "^not-in-dataset" <<<"$("$wit" query "$work/run" --doc "$work/binary.bin")" || fail "binary file"
grep -q "out of range" <<<"$("$wit" query "$work/run" --doc-id 4000 2>&1)" || fail "id out of range"
echo '{"format": "wit-query-proof-v2"' >"$work/broken.json"
grep -q "not JSON" <<<"$("$wit" query --check-proof "$work/broken.json" "${run_id[@]}" 2>&1)" || fail "malformed proof file"
"$wit" prepare "$work/corpus" --format dir --val-fraction 0.3 --out "$work/other-data" >/dev/null
grep -q "give the run's dataset" <<<"$("$wit" query "$work/run" --doc "$inc" --data "$work/other-data" 2>&1)" || fail "another dataset accepted"
echo "query: answers, proofs and errors as expected"
