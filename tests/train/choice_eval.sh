#!/usr/bin/env bash
# A multiple-choice evaluation in HellaSwag's file format (train.choice_eval): scored at every
# val evaluation and committed beside the val loss (the file by its SHA-256), the same score as
# transformers computes from the exported model, rescored bit for bit by `wit verify` and by a
# resume; a missing or other file is an error asking for it, an inflated score is rejected, and
# a bad file is refused naming its line.
# Usage: choice_eval.sh WIT_BINARY LIAR_BINARY SOURCE_DIR
wit=$1 liar=$2 src=$3
source "$(dirname "$0")/setup.sh"
"$src/tests/train/kjv_choice.py" "$work/kjv.jsonl" 40 || fail "writing the set"
small=(--set data.dir="$work/data" --set model.n_layer=2 --set model.n_head=2 --set model.n_embd=64
       --set data.seq_len=64 --set train.micro_batch_size=8 --set train.eval_every=20
       --set train.checkpoint_every=20 --set train.eval_batches=2 --set train.threads=1
       --set train.steps=60 --set optim.lr=3e-3 --set witness.fingerprint_every=20)

"$wit" train "$src/configs/tiny.yaml" "${small[@]}" --set train.choice_eval="$work/kjv.jsonl" \
  --out "$work/a" >"$work/a.out" 2>&1 || { cat "$work/a.out"; fail "train a"; }
grep -q "step     60/60 | val loss [0-9.]* | choice acc_norm [0-9.]* acc [0-9.]* (40 examples)" "$work/a.out" ||
  { cat "$work/a.out"; fail "no choice line"; }
grep -q '"choice_acc_norm"' "$work/a/metrics.jsonl" || fail "metrics.jsonl has no choice_acc_norm"
sha=$(sha256sum "$work/kjv.jsonl" | cut -d' ' -f1)
# The log: three rows per evaluation, the committed config holding the file's hash, not its path.
/usr/bin/python3 - "$work/a/witness.h5" "$sha" "$work/kjv.jsonl" <<'PY' || fail "the log's rows"
import h5py, sys
f = h5py.File(sys.argv[1], "r")
y = f["meta"].attrs["committed_yaml"]
y = y.decode() if isinstance(y, bytes) else y
assert f"choice_eval_sha256: \"{sys.argv[2]}\"" in y, y
assert sys.argv[3] not in y, "the path is committed"
e = f["evals"]
rows = [(int(s), sp.decode().rstrip("\0"), m.decode().rstrip("\0"))
        for s, sp, m in zip(e["step"][:], e["split"][:], e["metric"][:])]
want = [(s, sp, m) for s in (20, 40, 60) for sp, m in (("val", "loss"), ("choice", "acc"), ("choice", "acc_norm"))]
assert rows == want, rows
PY
"$wit" inspect "$work/a" >"$work/inspect.out" 2>&1 || { cat "$work/inspect.out"; fail "inspect"; }
grep -q "choice       acc_norm" "$work/inspect.out" || { cat "$work/inspect.out"; fail "inspect shows no choice line"; }
grep -q "(after 60 steps; 3 evaluations)" "$work/inspect.out" || { cat "$work/inspect.out"; fail "inspect counts rows as evaluations"; }

# The same score from the exported model, by transformers, over the same byte tokens.
logged=$(/usr/bin/python3 -c 'import h5py, sys; v = h5py.File(sys.argv[1], "r")["evals"]["value"]; print(repr(float(v[-2])), repr(float(v[-1])))' "$work/a/witness.h5")
"$python" - "$work/a" "$work/kjv.jsonl" $logged <<'PY' || fail "transformers' score differs"
import json, sys, torch
from transformers import GPT2LMHeadModel
run, data = sys.argv[1], sys.argv[2]
acc, acc_norm = float(sys.argv[3]), float(sys.argv[4])
model = GPT2LMHeadModel.from_pretrained(run).eval()
right = right_norm = n = 0
for line in open(data):
    ex = json.loads(line)
    ctx = list(ex["ctx"].encode())
    totals, means = [], []
    for ending in ex["endings"]:
        end = list((" " + ending).encode())
        seq = torch.tensor([ctx + end])
        with torch.no_grad():
            logp = torch.log_softmax(model(seq[:, :-1]).logits.float(), -1)[0]
        lp = logp[torch.arange(len(ctx) - 1, len(ctx) - 1 + len(end)), seq[0, len(ctx):]]
        totals.append(float(lp.double().sum()))
        means.append(totals[-1] / len(end))
    right += max(range(len(totals)), key=lambda k: (totals[k], -k)) == ex["label"]
    right_norm += max(range(len(means)), key=lambda k: (means[k], -k)) == ex["label"]
    n += 1
print(f"wit: acc {acc:.4f} acc_norm {acc_norm:.4f}; transformers: {right}/{n} {right_norm}/{n}")
sys.exit(abs(acc - right / n) > 1e-6 or abs(acc_norm - right_norm / n) > 1e-6)
PY

# Verification: certified from config.yaml's path or --choice-eval; a missing or other file is an
# error asking for it, never a rejection.
"$wit" verify "$work/a" --key "$work/verifier.pem" >"$work/v1" 2>&1 || { cat "$work/v1"; fail "a is not certified"; }
grep -q "CERTIFIED" "$work/v1" || { cat "$work/v1"; fail "no CERTIFIED"; }
grep -q "multiple-choice acc .* over 40 examples" "$work/v1" || { cat "$work/v1"; fail "the evaluation stage does not name the choice score"; }
mv "$work/kjv.jsonl" "$work/moved.jsonl"
"$wit" verify "$work/a" --key "$work/verifier.pem" >"$work/v2" 2>&1 && fail "verified without the file"
grep -q "give its file with --choice-eval" "$work/v2" || { cat "$work/v2"; fail "no hint for --choice-eval"; }
grep -q "REJECTED" "$work/v2" && fail "a missing file rejected the run"
head -n 39 "$work/moved.jsonl" >"$work/other.jsonl"
"$wit" verify "$work/a" --choice-eval "$work/other.jsonl" --key "$work/verifier.pem" >"$work/v3" 2>&1 &&
  fail "verified with another file"
grep -q "other.jsonl has SHA-256 [0-9a-f]*, not the committed $sha; give its file with --choice-eval" "$work/v3" || { cat "$work/v3"; fail "another file not named"; }
grep -q "REJECTED" "$work/v3" && fail "another file rejected the run"
# A hint that points at something else on the verifier's machine is hashed, never parsed.
sed -i "s|choice_eval: .*|choice_eval: /etc/passwd|" "$work/a/config.yaml"
"$wit" verify "$work/a" --key "$work/verifier.pem" >"$work/v5" 2>&1 && fail "verified with /etc/passwd"
grep -q "/etc/passwd has SHA-256 [0-9a-f]*, not the committed" "$work/v5" || { cat "$work/v5"; fail "a foreign hint: message"; }
grep -q "root:" "$work/v5" && fail "a foreign hint's content was printed"
"$wit" verify "$work/a" --choice-eval "$work/moved.jsonl" --key "$work/verifier.pem" >"$work/v4" 2>&1 ||
  { cat "$work/v4"; fail "--choice-eval"; }
echo "verify: certified with the file from config.yaml or --choice-eval; missing or other files are an error"

# A trainer that logs a better score, chained and signed: the rescoring rejects it.
cp -r "$work/a" "$work/lie" && rm -f "$work/lie/certificate.json"
"$liar" "$work/lie" "$WIT_SIGNING_KEY" inflate-choice >/dev/null || fail "inflate-choice"
"$wit" verify "$work/lie" --choice-eval "$work/moved.jsonl" --key "$work/verifier.pem" >"$work/lie.out" 2>&1 &&
  { cat "$work/lie.out"; fail "an inflated choice score was certified"; }
grep -q "REJECTED: .*eval after step 60, choice acc_norm ([0-9]* of 40 examples): recomputed" "$work/lie.out" ||
  { cat "$work/lie.out"; fail "inflated score: reason"; }
echo "lie inflate-choice: $(grep REJECTED "$work/lie.out")"

# A resume rescores with the file it committed to: the same rows as never stopping.
"$wit" train "$src/configs/tiny.yaml" "${small[@]}" --set train.choice_eval="$work/moved.jsonl" \
  --until 20 --out "$work/r" -q >/dev/null 2>&1 || fail "train r to step 20"
out=$("$wit" train --resume "$work/r" --set train.choice_eval="$work/other.jsonl" -q 2>&1) &&
  fail "resumed with another file"
grep -q "other.jsonl has SHA-256 [0-9a-f]*, not the committed $sha" <<<"$out" || fail "resume with another file: $out"
"$wit" train --resume "$work/r" -q >/dev/null 2>&1 || fail "resume r"
/usr/bin/python3 - "$work/a/witness.h5" "$work/r/witness.h5" <<'PY' || fail "the resumed run's evals differ"
import h5py, sys
a, r = (h5py.File(p, "r")["evals"]["value"][:].tobytes() for p in sys.argv[1:])
sys.exit(a != r)
PY
"$wit" train "$src/configs/tiny.yaml" "${small[@]}" --until 20 --out "$work/plain" -q >/dev/null 2>&1 || fail "train plain"
out=$("$wit" train --resume "$work/plain" --set train.choice_eval="$work/moved.jsonl" -q 2>&1) &&
  fail "a resume added a multiple-choice evaluation"
grep -q "a resume cannot add one" <<<"$out" || fail "resume adding a choice eval: $out"
echo "resume: the same rows as never stopping; another file or a new evaluation refused"

# Bad files: refused before anything is written, naming the line.
printf '%s\n' '{"ctx": "In the beginning", "label": 0}' >"$work/bad.jsonl"
out=$("$wit" train "$src/configs/tiny.yaml" "${small[@]}" --set train.choice_eval="$work/bad.jsonl" --out "$work/bad" -q 2>&1) &&
  fail "a file without endings accepted"
grep -q "bad.jsonl:1: no field 'endings' (the line has: ctx, label)" <<<"$out" || fail "no endings: $out"
[ ! -e "$work/bad/config.yaml" ] || fail "a refused run left a config behind"
printf '%s\n' '{"ctx": "In the beginning", "endings": ["God", "man"], "label": 2}' >"$work/bad.jsonl"
out=$("$wit" train "$src/configs/tiny.yaml" "${small[@]}" --set train.choice_eval="$work/bad.jsonl" --out "$work/bad" -q 2>&1) &&
  fail "a label out of range accepted"
grep -q "bad.jsonl:1: label must be the index of one of the 2 endings, not 2" <<<"$out" || fail "bad label: $out"
echo "choice eval: all passed"
