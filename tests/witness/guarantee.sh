#!/usr/bin/env bash
# The guarantee against a trainer who controls its log, its key and its files: each class of
# attack that once got a forged run certified is refused now.
#   1. grinding Fiat–Shamir challenges: refused under the default; under --fiat-shamir the
#      certificate states no bound it cannot keep;
#   2. the ends: a model trained further than logged, a first checkpoint from another
#      initialisation — rejected whatever the draws, since the first and last segments are
#      always replayed;
#   4. rows nothing checks: a second final eval, a test/accuracy row;
#   6. certificates: signed by another key, or copied beside another run;
#   7. a corrupt checkpoint no challenge loads (by its leaf table and sampled leaves, or read
#      whole); damaged logs neither hang nor crash a reader;
#   8. a dataset whose records hide a document from wit query, prepared and trained on.
# Usage: guarantee.sh WIT_BINARY DISHONEST_BINARY SOURCE_DIR
source "$(dirname "$0")/verify_setup.sh"
"$wit" train "$cfg" "${sets[@]}" --out "$work/n1" -q >/dev/null || fail "train n1"
"$wit" train "$cfg" "${sets[@]}" --set train.seed=5 --out "$work/other" -q >/dev/null || fail "train other"
fresh() { rm -rf "$work/lie" && cp -r "$work/n1" "$work/lie" && rm -f "$work/lie/certificate."*; }
verify_k() { "$wit" verify "$1" --key "$work/verifier.pem" --trainer-key "$WIT_SIGNING_KEY.pub" "${@:2}"; }

# 1. A forger who grinds signed heads until the Fiat-Shamir draws miss its forged segment
# (segment 1 of the 2 middle ones: a quarter of the steps forged).
fresh
"$liar" "$work/lie" "$WIT_SIGNING_KEY" grind-fiat-shamir 8 4 | tee "$work/grind.out" || fail "grind"
verify_k "$work/lie" --fiat-shamir -c 8 >"$work/fs.out" 2>&1 || { cat "$work/fs.out"; fail "the ground log was not certified under --fiat-shamir (the grind did not work)"; }
# The replay is priced before it starts: steps planned, and the trainer's time for them.
grep -q "^  plan: [0-9]* steps to replay ([0-9]* % of the run's [0-9]*) in [0-9]* segment(s); the trainer's step times for them add up to" "$work/fs.out" ||
  { cat "$work/fs.out"; fail "no plan before the replay"; }
/usr/bin/python3 - "$work/lie/certificate.json" <<'PY' || fail "Fiat-Shamir certificate overstates its bound"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["challenge_source"]["kind"] == "fiat-shamir" and c["challenge_source"]["grinding_budget_bits"] == 40
assert "only against a trainer who did not retry" in c["guarantee"]["statement"]
# The trainer could compute the sampled leaves from its own signed head: no availability bound.
cs = c["checkpoints"]["statement"]
assert "which the trainer could compute, so nothing is shown of the others (no bound" in cs, cs
assert "probability" not in cs, cs
for b in c["guarantee"]["bounds"]:
    # f = 25 %, c = 8, 2^40 tries: 2^40 * 0.75^8 > 1, so no guarantee may be stated.
    assert b["rejected_with_probability_at_least"] == 0.0, b
print("fiat-shamir certificate of the ground log: bound 0 at every f (no guarantee), as it must")
PY
rm -f "$work/lie/certificate."*
if verify_k "$work/lie" -c 20 >"$work/def.out" 2>&1; then cat "$work/def.out"; fail "the ground log was certified under the default challenges"; fi
grep -q "REJECTED: challenges: step 4, field loss" "$work/def.out" || { cat "$work/def.out"; fail "ground log: reason"; }
echo "grinding forger: certified only by --fiat-shamir with no bound; default: $(grep REJECTED "$work/def.out")"

# 2. The ends, whatever the draws: a model trained further than logged (another run's final
# state and model, re-headed and logged), and a first checkpoint from another initialisation.
fresh
"$liar" "$work/lie" "$WIT_SIGNING_KEY" splice-checkpoint 12 "$work/other/checkpoints/step_00000012.ckpt" >/dev/null || fail splice
cp "$work/other/model.safetensors" "$work/lie/model.safetensors"
for seed in 1 2 3 4 5 6; do
  if verify_k "$work/lie" -c 1 --seed $seed >"$work/end.out" 2>&1; then cat "$work/end.out"; fail "another final state certified (seed $seed)"; fi
  grep -q "REJECTED: challenges: checkpoint after step 12" "$work/end.out" || { cat "$work/end.out"; fail "final state: reason"; }
done
echo "another final state and model: rejected for seeds 1-6 ($(grep REJECTED "$work/end.out"))"
fresh
"$liar" "$work/lie" "$WIT_SIGNING_KEY" splice-checkpoint 3 "$work/other/checkpoints/step_00000003.ckpt" >/dev/null || fail splice
for seed in 1 2 3 4 5 6; do
  if verify_k "$work/lie" -c 1 --seed $seed >"$work/start.out" 2>&1; then cat "$work/start.out"; fail "a first checkpoint from another init certified (seed $seed)"; fi
  grep -q "REJECTED: challenges: checkpoint after step 3" "$work/start.out" || { cat "$work/start.out"; fail "first checkpoint: reason"; }
done
echo "a first checkpoint from another initialisation: rejected for seeds 1-6"

# 4. Rows nothing checked: every row is on the committed schedule, or the log is refused, by
# `wit inspect` as by `wit verify` (these logs are chained and signed with the run's key).
for attack in second-final-eval extra-metric; do
  fresh
  "$liar" "$work/lie" "$WIT_SIGNING_KEY" $attack >/dev/null || fail "$attack"
  "$wit" inspect "$work/lie" >"$work/rows.out" 2>&1 && fail "$attack: wit inspect accepts the log"
  case $attack in
    second-final-eval) problem="evals row 2, field step: step 12 comes after step 12" ;;
    extra-metric) problem="evals row 2, field split: is 'test' 'accuracy' where the committed config gives 'val' 'loss'" ;;
  esac
  grep -q "PROBLEM      $problem" "$work/rows.out" || { cat "$work/rows.out"; fail "$attack: inspect message"; }
  check_rejected_anyway() {
    if verify_k "$work/lie" -c 4 >"$work/lie.out" 2>&1; then cat "$work/lie.out"; fail "$attack was certified"; fi
    grep -q "REJECTED: structure: ${problem%%:*}" "$work/lie.out" || { cat "$work/lie.out"; fail "$attack: reason"; }
  }
  check_rejected_anyway
  echo "lie $attack: $(grep REJECTED "$work/lie.out")"
done

# 6. Certificates bind to a verifier's key and to the run.
verify_k "$work/n1" -c 4 >/dev/null 2>&1 || fail "honest n1 not certified"
"$wit" keygen --out "$work/mallory.pem" >/dev/null
/usr/bin/python3 - "$work/n1/certificate.json" "$work/forged-cert.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["result"] = "certified"; c["verifier_key"] = "00" * 32
json.dump(c, open(sys.argv[2], "w"))
PY
"$wit" verify --check-certificate "$work/forged-cert.json" --verifier-key "$work/verifier.pem.pub" "$work/n1" >"$work/cert.out" 2>&1 && fail "a certificate naming another key was accepted"
grep -q "INVALID certificate.*not by the key required" "$work/cert.out" || { cat "$work/cert.out"; fail "other key: message"; }
"$wit" verify --check-certificate "$work/n1/certificate.json" --verifier-key "$work/mallory.pem.pub" >"$work/cert.out" 2>&1 && fail "a certificate accepted for a key that did not sign it"
"$wit" verify --check-certificate "$work/n1/certificate.json" >"$work/cert.out" 2>&1 && fail "a certificate checked without a verifier key"
grep -q "needs --verifier-key" "$work/cert.out" || { cat "$work/cert.out"; fail "no key: message"; }
cp "$work/n1/certificate.json" "$work/other/certificate.json"
"$wit" verify --check-certificate "$work/other/certificate.json" --verifier-key "$work/verifier.pem.pub" "$work/other" >"$work/cert.out" 2>&1 && fail "a certificate copied beside another run was accepted"
grep -q "INVALID certificate.*field genesis is not the run's" "$work/cert.out" || { cat "$work/cert.out"; fail "copied certificate: message"; }
"$wit" verify --check-certificate "$work/n1/certificate.json" --verifier-key "$work/verifier.pem.pub" "$work/n1" >/dev/null || fail "the honest certificate does not check"
echo "certificates: another key, no key, copied beside another run: refused; the honest one checks"
# Every reader states a certificate's strength, and exits 4 for one weaker than a certification
# from fresh randomness unless told to accept that kind by name.
"$wit" verify --check-certificate "$work/n1/certificate.json" --verifier-key "$work/verifier.pem.pub" >"$work/cert.out" 2>&1 || fail "the honest certificate"
grep -q "^strength: certified, challenges from verifier-random" "$work/cert.out" || { cat "$work/cert.out"; fail "strength line"; }
printf 'In the beginning\n' >"$work/doc.txt"
"$wit" query "$work/n1" --doc "$work/doc.txt" --proof "$work/doc.proof" >/dev/null || fail "query for a proof"
"$wit" query --check-proof "$work/doc.proof" --certificate "$work/n1/certificate.json" --verifier-key "$work/verifier.pem.pub" >"$work/q.out" 2>&1 || { cat "$work/q.out"; fail "a proof with the honest certificate"; }
grep -q "^certificate: certified, challenges from verifier-random" "$work/q.out" || { cat "$work/q.out"; fail "query: strength line"; }
# The certificate says how the dataset names documents (every record was checked so): a proof
# checked with --doc is about the document hashed that way only.
/usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1]))['dataset']; assert d == {'tokenizer': 'byte', 'tokens_in_no_document': 0}, d" \
  "$work/n1/certificate.json" || fail "the certificate's dataset field"
"$wit" query --check-proof "$work/doc.proof" --certificate "$work/n1/certificate.json" --verifier-key "$work/verifier.pem.pub" \
  --doc "$work/doc.txt" >"$work/q.out" 2>&1 || { cat "$work/q.out"; fail "a proof of its document with the certificate"; }
grep -q "doc.txt (hashed as text)" "$work/q.out" || { cat "$work/q.out"; fail "the document's hash, as the certificate says"; }
for kind in seed fiat-shamir tolerance; do
  rm -rf "$work/weak" && cp -r "$work/n1" "$work/weak" && rm -f "$work/weak/certificate."*
  case $kind in
    seed) verify_k "$work/weak" -c 1 --seed 7 >/dev/null 2>&1 ;;
    fiat-shamir) verify_k "$work/weak" -c 1 --fiat-shamir >/dev/null 2>&1 ;;
    tolerance) verify_k "$work/weak" -c 1 --tolerance 1e-3 >/dev/null 2>&1 ;;
  esac
  [ -f "$work/weak/certificate.json" ] || fail "$kind: no certificate written"
  check=(--check-certificate "$work/weak/certificate.json" --verifier-key "$work/verifier.pem.pub" "$work/weak")
  "$wit" verify "${check[@]}" >"$work/cert.out" 2>&1
  rc=$?
  [ $rc -eq 4 ] || { cat "$work/cert.out"; fail "a $kind certificate checked with exit $rc, expected 4"; }
  grep -q "weaker than a certification from fresh randomness.*--accept $kind" "$work/cert.out" || { cat "$work/cert.out"; fail "$kind: message"; }
  grep -q "^strength: " "$work/cert.out" || fail "$kind: no strength line"
  other=seed; [ $kind = seed ] && other=tolerance
  "$wit" verify "${check[@]}" --accept $other >/dev/null 2>&1
  [ $? -eq 4 ] || fail "a $kind certificate accepted by --accept $other"
  "$wit" verify "${check[@]}" --accept $kind >/dev/null 2>&1 || fail "a $kind certificate refused with --accept $kind"
  q=(--check-proof "$work/doc.proof" --certificate "$work/weak/certificate.json" --verifier-key "$work/verifier.pem.pub")
  "$wit" query "${q[@]}" >"$work/q.out" 2>&1
  rc=$?
  [ $rc -eq 4 ] || { cat "$work/q.out"; fail "query accepted a $kind certificate (exit $rc)"; }
  grep -q "^valid" "$work/q.out" && fail "query called a proof valid on a $kind certificate not accepted"
  "$wit" query "${q[@]}" --accept $kind >/dev/null 2>&1 || fail "query refused a $kind certificate with --accept $kind"
done
"$wit" verify --check-certificate "$work/n1/certificate.json" --verifier-key "$work/verifier.pem.pub" --accept sead >"$work/cert.out" 2>&1 && fail "--accept sead"
grep -q "expected tolerance, seed or fiat-shamir" "$work/cert.out" || { cat "$work/cert.out"; fail "--accept: message"; }
echo "certificate strength: seed, Fiat-Shamir and tolerance certificates exit 4 in verify and query unless accepted by name"

# 7. A corrupt checkpoint in a stretch no challenge would load (checked by its leaf table and
# sampled leaves, or whole), and damaged logs.
ck="$work/lie/checkpoints/step_00000006.ckpt"
damage() {  # FILE WHERE: flip one byte at the middle of the payload, in every leaf (each is 4 KiB or a power-of-two multiple), or in the leaf table
  /usr/bin/python3 - "$@" <<'PY'
import struct, sys
p, where = sys.argv[1:3]
b = bytearray(open(p, "rb").read())
n = struct.unpack_from("<Q", b, 24)[0]
payload, total = 64, 12 * n
if where == "middle":
    b[payload + total // 2] ^= 1
elif where == "every-leaf":
    for at in range(0, total, 4096): b[payload + at] ^= 1
elif where == "table":
    b[payload + total + 5] ^= 1
open(p, "wb").write(b)
PY
}
fresh && damage "$ck" middle
# Asked for more leaves than it has, the verifier hashes every leaf: the one damaged byte is found.
verify_k "$work/lie" -c 1 --seed 1 --checkpoint-leaves 100000 >"$work/ck.out" 2>&1 && { cat "$work/ck.out"; fail "a corrupt checkpoint was certified"; }
grep -q "REJECTED: structure: .*step_00000006.ckpt: leaf .* does not match its leaf table entry" "$work/ck.out" || { cat "$work/ck.out"; fail "corrupt checkpoint: reason"; }
echo "a corrupt middle checkpoint, every leaf sampled: $(grep REJECTED "$work/ck.out")"
verify_k "$work/lie" -c 1 --seed 1 --whole-checkpoints >"$work/ck.out" 2>&1 && { cat "$work/ck.out"; fail "--whole-checkpoints: a corrupt checkpoint was certified"; }
grep -q "REJECTED: structure: .*step_00000006.ckpt: checkpoint contents do not match" "$work/ck.out" || { cat "$work/ck.out"; fail "--whole-checkpoints: reason"; }
fresh && damage "$ck" every-leaf
verify_k "$work/lie" -c 1 --seed 1 --checkpoint-leaves 1 >"$work/ck.out" 2>&1 && { cat "$work/ck.out"; fail "a checkpoint with every leaf damaged was certified from one sampled leaf"; }
grep -q "REJECTED: structure: .*step_00000006.ckpt: leaf .* does not match its leaf table entry" "$work/ck.out" || { cat "$work/ck.out"; fail "every leaf damaged: reason"; }
fresh && damage "$ck" table
verify_k "$work/lie" -c 1 --seed 1 --checkpoint-leaves 1 >"$work/ck.out" 2>&1 && { cat "$work/ck.out"; fail "a checkpoint with a damaged leaf table was certified"; }
grep -q "REJECTED: structure: .*step_00000006.ckpt: the leaf table does not hash to the checkpoint's state hash" "$work/ck.out" || { cat "$work/ck.out"; fail "damaged leaf table: reason"; }
echo "one sampled leaf: every leaf damaged, or the leaf table damaged: rejected"
# wit inspect checks the files a run directory holds against its log (headers only).
fresh
"$wit" inspect "$work/lie" >"$work/ins.out" 2>&1 || { cat "$work/ins.out"; fail "inspect of an intact run"; }
grep -Eq "files        4 checkpoint file\\(s\\) present" "$work/ins.out" || { cat "$work/ins.out"; fail "inspect: files line"; }
rm "$ck"
"$wit" inspect "$work/lie" >"$work/ins.out" 2>&1 && { cat "$work/ins.out"; fail "inspect calls a run with a deleted checkpoint fine"; }
grep -q "PROBLEM      checkpoint after step 6: .*step_00000006.ckpt is missing" "$work/ins.out" || { cat "$work/ins.out"; fail "inspect: missing checkpoint message"; }
cp "$work/other/checkpoints/step_00000006.ckpt" "$ck"
"$wit" inspect "$work/lie" --json >"$work/ins.out" 2>&1 && fail "inspect calls a run with another run's checkpoint fine"
grep -q "of another run or model" "$work/ins.out" || { cat "$work/ins.out"; fail "inspect: another run's checkpoint message"; }
echo "wit inspect: a deleted checkpoint and another run's checkpoint are problems (exit 1)"
size=$(stat -c %s "$work/n1/witness.h5")
crashed=0 hung=0 tried=0
for ((at = 0; at < size; at += size / 80 + 1)); do
  cp "$work/n1/witness.h5" "$work/flip.h5"
  printf "$(printf '\\x%02x' $(( ($(od -An -tu1 -j $at -N1 "$work/flip.h5") ^ 0x5a) )))" |
    dd of="$work/flip.h5" bs=1 seek=$at conv=notrunc status=none
  timeout 20 "$wit" inspect "$work/flip.h5" >/dev/null 2>&1
  rc=$?
  tried=$((tried + 1))
  [ $rc -eq 124 ] && { hung=$((hung + 1)); echo "byte $at: wit inspect hung"; }
  [ $rc -gt 1 ] && [ $rc -ne 124 ] && { crashed=$((crashed + 1)); echo "byte $at: wit inspect exited $rc"; }
done
[ $hung -eq 0 ] && [ $crashed -eq 0 ] || fail "$hung hangs and $crashed crashes over $tried damaged logs"
echo "damaged logs: $tried single-byte damages, each refused or read in time, none crashed"
# 3. The dataset's location is an unsigned hint: pointing it elsewhere is the verifier's error to
# fix (--data), never a verdict against an honest trainer.
fresh
/usr/bin/python3 - "$work/lie/witness.h5" <<'PY'
import sys, json, h5py, numpy as np
with h5py.File(sys.argv[1], "r+") as f:
    s = json.loads(f["meta"].attrs["sessions_json"].decode())
    s[-1]["data_dir"] = "/nonexistent-dataset"
    f["meta"].attrs["sessions_json"] = np.bytes_(json.dumps(s).encode())
PY
verify_k "$work/lie" -c 2 >"$work/hint.out" 2>&1 && { cat "$work/hint.out"; fail "a run with a moved dataset hint verified without --data"; }
grep -q "REJECTED" "$work/hint.out" && { cat "$work/hint.out"; fail "an edited dataset hint rejected an honest run"; }
grep -q "wit: error: /nonexistent-dataset .*give the run's dataset with --data" "$work/hint.out" || { cat "$work/hint.out"; fail "dataset hint: message"; }
verify_k "$work/lie" -c 2 --data "$work/data" >"$work/hint.out" 2>&1 || { cat "$work/hint.out"; fail "with --data the honest run is not certified"; }
echo "an edited dataset hint: an error asking for --data, not a verdict; with --data: certified"
# 8. The trainer prepares the data: its manifest records document 5 under the hash of other text
# (its root recomputed), so wit query would say not-in-dataset for a document trained on. The
# run is honest on that dataset; the verifier checks every record against its tokens.
cp -r "$work/data" "$work/hiding"
"$liar" "$work/hiding" - hide-document 5 || fail "hide-document"
"$wit" train "$cfg" "${sets[@]}" --set data.dir="$work/hiding" --out "$work/hidden" -q >/dev/null || fail "train on the hiding dataset"
verify_k "$work/hidden" -c 2 >"$work/hide.out" 2>&1 && { cat "$work/hide.out"; fail "a run whose dataset hides a document was certified"; }
grep -q "REJECTED: structure: .*document 5 ([a-z]* split, tokens [0-9]* to [0-9]*): its tokens decode to text of SHA-256 [0-9a-f]*, but the record says" "$work/hide.out" ||
  { cat "$work/hide.out"; fail "hidden document: reason"; }
echo "a dataset hiding a document from queries: $(grep -o 'REJECTED: structure: .*document 5 ([^)]*)' "$work/hide.out")"
echo "guarantee: every class refused"
