#!/usr/bin/env bash
# Honest runs are certified when replayed on one or two processes, whatever world size and layout
# trained them; each dishonest trainer (tests/witness/dishonest.cpp: a well-formed log, signed with the
# run's own key) is rejected, and the reason names the first mismatching step and field.
# Also: certificates with any field changed fail their check; an honest run with a
# nondeterministic setting is "not reproducible"; tolerance mode; bad input.
# Usage: dishonest_runs.sh WIT_BINARY DISHONEST_BINARY SOURCE_DIR
source "$(dirname "$0")/verify_setup.sh"
"$wit" train "$cfg" "${sets[@]}" --out "$work/n1" -q >/dev/null || fail "train n1"
$mpirun 2 "$wit" train "$cfg" "${sets[@]}" --out "$work/n2" -q >/dev/null || fail "train n2"
$mpirun 4 "$wit" train "$cfg" "${sets[@]}" --out "$work/n4" -q >/dev/null || fail "train n4"
$mpirun 2 "$wit" train "$cfg" "${sets[@]}" --set dist.mode=fsdp --out "$work/f2" -q >/dev/null || fail "train f2"
$mpirun 4 "$wit" train "$cfg" "${sets[@]}" --set dist.mode=fsdp --out "$work/f4" -q >/dev/null || fail "train f4"

# Every honest run (1, 2, 4 processes; ddp and fsdp) is certified by a verifier on one process
# and on two (either layout).
for run in n1 n2 n4 f2 f4; do
  for replay in 1 2 2f; do
    case $replay in
      1) launch=() extra=() ;;
      2) launch=($mpirun 2) extra=() ;;
      2f) launch=($mpirun 2) extra=(--mode fsdp) ;;
    esac
    rm -f "$work/$run/certificate.json"
    "${launch[@]}" "$wit" verify "$work/$run" --key "$work/verifier.pem" \
      --trainer-key "$WIT_SIGNING_KEY.pub" -c 40 "${extra[@]}" >"$work/$run.out" 2>&1 ||
      { cat "$work/$run.out"; fail "honest run $run rejected when replayed at $replay"; }
    grep -q "^CERTIFIED" "$work/$run.out" || fail "no CERTIFIED line for $run at $replay"
    grep -q "replayed bit for bit on ${replay%f} process(es)" "$work/$run.out" || fail "$run: replay size"
    "$wit" verify --check-certificate "$work/$run/certificate.json" --verifier-key "$work/verifier.pem.pub" "$work/$run" >/dev/null || fail "certificate of $run"
    echo "honest $run replayed on $replay: certified"
  done
done

# The verifier's layouts have the trainer's rules, with the trainer's words: fsdp at N = 4
# certifies M = 4; with M = 12 (not a power of two) ddp at N = 2 and 4 certifies, and fsdp on
# N > 1 is refused by `wit train` and `wit verify` with the same message.
$mpirun 4 "$wit" verify "$work/n1" --key "$work/verifier.pem" --trainer-key "$WIT_SIGNING_KEY.pub" \
  -c 40 --mode fsdp >"$work/f4v.out" 2>&1 || { cat "$work/f4v.out"; fail "n1 replayed at 4 fsdp"; }
grep -q "^CERTIFIED" "$work/f4v.out" || fail "no CERTIFIED line for n1 at 4 fsdp"
echo "honest n1 replayed on 4f: certified"
"$wit" train "$cfg" "${sets[@]}" --set train.micro_batches=12 --set train.micro_batch_size=1 \
  --out "$work/m12" -q >/dev/null || fail "train m12"
for np in 2 4; do
  $mpirun $np "$wit" verify "$work/m12" --key "$work/verifier.pem" -c 40 >"$work/m12.out" 2>&1 ||
    { cat "$work/m12.out"; fail "m12 replayed at $np ddp"; }
  grep -q "^CERTIFIED" "$work/m12.out" || fail "no CERTIFIED line for m12 at $np ddp"
  rm -f "$work/m12/certificate.json"
  rule="dist.mode = fsdp needs train.micro_batches to be a power of two (got 12)"
  $mpirun $np "$wit" verify "$work/m12" --key "$work/verifier.pem" --mode fsdp >"$work/m12f.out" 2>&1 &&
    fail "m12 verified with fsdp at $np"
  grep -q "$rule" "$work/m12f.out" || { cat "$work/m12f.out"; fail "verify fsdp m12 at $np: message"; }
  $mpirun $np "$wit" train "$cfg" "${sets[@]}" --set train.micro_batches=12 --set train.micro_batch_size=1 \
    --set dist.mode=fsdp --out "$work/m12f$np" -q >"$work/m12t.out" 2>&1 && fail "m12 trained with fsdp at $np"
  grep -q "$rule" "$work/m12t.out" || { cat "$work/m12t.out"; fail "train fsdp m12 at $np: message"; }
  [ -e "$work/m12f$np" ] && fail "a refused fsdp run left $work/m12f$np behind"
  echo "M = 12 at $np: ddp certified; fsdp refused by train and verify alike"
done

# A certificate with any field changed no longer checks.
/usr/bin/python3 - "$work/n1/certificate.json" "$work" <<'PY' || fail "certificate fields"
import json, sys
cert = json.load(open(sys.argv[1]))
# The certificate says what the replay computed on.
rc = cert["replay_compute"]
assert rc["device"] == "cpu" and rc["numerics"] and rc["cpu"], rc
def variants(value):
    if isinstance(value, bool): yield not value
    elif isinstance(value, (int, float)): yield value + 1
    elif isinstance(value, str): yield value[:-1] + ("0" if value[-1:] != "0" else "1")
    elif isinstance(value, list): yield value[:-1] if value else [0]
    elif isinstance(value, dict):
        for k in value:
            for v in variants(value[k]): yield {**value, k: v}
n = 0
for key in cert:
    if key == "signature": continue
    for v in variants(cert[key]):
        json.dump({**cert, key: v}, open(f"{sys.argv[2]}/cert-{n}.json", "w"))
        n += 1
json.dump({k: v for k, v in cert.items() if k != "guarantee"}, open(f"{sys.argv[2]}/cert-{n}.json", "w"))
print(f"{n + 1} tampered certificates")
PY
tampered=0
for f in "$work"/cert-*.json; do
  if "$wit" verify --check-certificate "$f" --verifier-key "$work/verifier.pem.pub" >"$work/cert.out" 2>&1; then
    cat "$f"; fail "a tampered certificate ($f) checks"
  fi
  grep -q "INVALID certificate" "$work/cert.out" || { cat "$work/cert.out"; fail "tampered certificate: message"; }
  tampered=$((tampered + 1))
done
[ "$tampered" -ge 15 ] || fail "only $tampered tampered certificates tried"
echo "certificates: $tampered tampered variants, every one invalid"

# An honest run with a nondeterministic setting: neither certified nor called fraud.
$mpirun 4 "$wit" train "$cfg" "${sets[@]}" --set dist.reduction=arrival --out "$work/a4" -q >/dev/null || fail "train a4"
verify "$work/a4" >"$work/a4.out" 2>&1
rc=$?
[ $rc -eq 3 ] || { cat "$work/a4.out"; fail "nondeterministic run: exit $rc, expected 3 (not reproducible)"; }
grep -q "^NOT REPRODUCIBLE: dist.reduction = arrival" "$work/a4.out" || { cat "$work/a4.out"; fail "a4: reason"; }
grep -Eq "^(CERTIFIED|REJECTED)" "$work/a4.out" && fail "a4: certified or rejected"
[ -f "$work/a4/certificate.json" ] && fail "a4: a certificate was written"
echo "nondeterministic a4: $(grep "^NOT REPRODUCIBLE" "$work/a4.out" | cut -c1-150)"

# Tolerance mode: replay compared within thresholds, distances reported, never "certified".
for run in n1 a4; do
  verify "$work/$run" --tolerance 1e-3 >"$work/tol.out" 2>&1
  rc=$?
  [ $rc -eq 4 ] || { cat "$work/tol.out"; fail "$run: tolerance exit $rc, expected 4 (consistent within tolerance, not certified)"; }
  grep -q "^CONSISTENT WITHIN TOLERANCE" "$work/tol.out" || { cat "$work/tol.out"; fail "$run: tolerance verdict"; }
  grep -q "^CERTIFIED" "$work/tol.out" && fail "$run: tolerance certified"
  grep -q "largest distances seen: loss" "$work/tol.out" || fail "$run: no distances"
  grep -q '"result": "consistent within tolerance"' "$work/$run/certificate.json" || fail "$run: report"
  echo "tolerance $run: $(grep "largest distances" "$work/tol.out")"
  rm -f "$work/$run/certificate.json"
done

# A run whose sessions say it trained on a GPU: an exact replay elsewhere is refused up front,
# naming both machines; with a tolerance it replays on the CPU and is never certified.
rm -rf "$work/gpu" && cp -r "$work/n1" "$work/gpu" && rm -f "$work/gpu/certificate.json"
/usr/bin/python3 - "$work/gpu/witness.h5" <<'PY' || fail "gpu claim: editing sessions_json"
import json, sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r+") as f:
    s = json.loads(f["meta"].attrs["sessions_json"])
    s[-1]["compute"] = {"device": "cuda", "gpu": "NVIDIA H200", "sm_count": 132, "cuda": "13.0",
                        "cublas": "13.1.0", "cudnn": 91300, "precision": "fp32", "attention": "math"}
    del f["meta"].attrs["sessions_json"]
    f["meta"].attrs["sessions_json"] = np.bytes_(json.dumps(s))
PY
verify "$work/gpu" >"$work/gpu.out" 2>&1 && fail "a GPU run was replayed exactly on the CPU"
grep -q "the run trained on NVIDIA H200 (132 SMs), CUDA 13.0.*this verifier has the CPU (no GPU): an exact replay needs the same GPU model and library versions.*--tolerance" "$work/gpu.out" ||
  { cat "$work/gpu.out"; fail "gpu claim: message"; }
grep -Eq "^(CERTIFIED|REJECTED)" "$work/gpu.out" && fail "gpu claim: a verdict"
[ -f "$work/gpu/certificate.json" ] && fail "gpu claim: a certificate was written"
verify "$work/gpu" --tolerance 1e-3 >"$work/gpu.out" 2>&1
[ $? -eq 4 ] || { cat "$work/gpu.out"; fail "gpu claim with a tolerance: expected exit 4"; }
grep -q "note: the run trained on NVIDIA H200.*replaying on the CPU in fp32" "$work/gpu.out" || { cat "$work/gpu.out"; fail "gpu claim: note"; }
"$wit" train --resume "$work/gpu" -q >"$work/gpu.out" 2>&1 && fail "a GPU run was resumed on the CPU"
grep -q "the run trained on NVIDIA H200.*and this process computes on the CPU (no GPU): a resume must continue the trajectory with the same arithmetic" "$work/gpu.out" ||
  { cat "$work/gpu.out"; fail "gpu claim: resume message"; }
echo "GPU run on a CPU verifier: refused exactly, consistent within a tolerance; resume on the CPU refused"

# Each lie: a fresh copy of the honest run, rewritten by the dishonest trainer.
expect_rejected() {  # NAME EXPECTED_REASON ATTACK ARGS...
  local name=$1 reason=$2
  shift 2
  rm -rf "$work/lie" && cp -r "$work/n1" "$work/lie" && rm -f "$work/lie/certificate.json"
  "$liar" "$work/lie" "$WIT_SIGNING_KEY" "$@" >/dev/null || fail "$name: the dishonest trainer failed"
  check_rejected "$name" ".*$reason"
}
expect_rejected misreported-lr "step 4, field lr" misreport-lr 4
expect_rejected misreported-clip "step 7, field grad_clip" misreport-clip 7
expect_rejected other-batch "step 5, field batch_hash" other-batch 5
expect_rejected forged-loss "step 8, field loss" forge-loss 8
expect_rejected skipped-step "step 10, field" skip 10
expect_rejected truncated "not complete: 9 of 12" truncate 9
expect_rejected inflated-eval "eval after step 12, field value" inflate-eval
expect_rejected claimed-other-init "step 0, field loss" claim-seed 77
rm -rf "$work/other" && "$wit" train "$cfg" "${sets[@]}" --set train.seed=5 --out "$work/other" -q >/dev/null
# Another run's checkpoint copied in as it is: it names another run in its header.
rm -rf "$work/lie" && cp -r "$work/n1" "$work/lie" && rm -f "$work/lie/certificate.json"
cp "$work/other/checkpoints/step_00000006.ckpt" "$work/lie/checkpoints/step_00000006.ckpt"
if verify "$work/lie" >"$work/lie.out" 2>&1; then fail "a copied checkpoint was certified"; fi
grep -q "REJECTED: structure: checkpoint .*step_00000006.ckpt belongs to another run" "$work/lie.out" || { cat "$work/lie.out"; fail "copied checkpoint: reason"; }
echo "lie copied-checkpoint: $(grep REJECTED "$work/lie.out")"
# Its state rewritten under this run's header and logged: the replay reaches another state.
rm -rf "$work/lie" && cp -r "$work/n1" "$work/lie" && rm -f "$work/lie/certificate.json"
"$liar" "$work/lie" "$WIT_SIGNING_KEY" splice-checkpoint 6 "$work/other/checkpoints/step_00000006.ckpt" >/dev/null || fail "splice"
if verify "$work/lie" >"$work/lie.out" 2>&1; then fail "a spliced checkpoint was certified"; fi
grep -Eq "REJECTED: (challenges|model).*(checkpoint|state|step 6)" "$work/lie.out" || { cat "$work/lie.out"; fail "spliced checkpoint: reason"; }
echo "lie spliced-checkpoint: $(grep REJECTED "$work/lie.out")"
# Another model published beside an honest log.
rm -rf "$work/lie" && cp -r "$work/n1" "$work/lie" && cp "$work/other/model.safetensors" "$work/lie/model.safetensors"
if verify "$work/lie" >"$work/lie.out" 2>&1; then fail "another published model was certified"; fi
grep -q "REJECTED: model: .*model.safetensors is not the export of the checkpoint after step 12" "$work/lie.out" || { cat "$work/lie.out"; fail "published model: reason"; }
echo "lie other-published-model: $(grep REJECTED "$work/lie.out")"
# A log tampered with after signing, without the key.
rm -rf "$work/lie" && cp -r "$work/n1" "$work/lie"
/usr/bin/python3 - "$work/lie/witness.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    f["steps/loss"][3] = 0.5
PY
if verify "$work/lie" >"$work/lie.out" 2>&1; then fail "a tampered log was certified"; fi
grep -q "REJECTED: structure: steps row 3, field record_hash" "$work/lie.out" || { cat "$work/lie.out"; fail "tampered log: reason"; }
echo "tampered log: $(grep REJECTED "$work/lie.out")"
rm -rf "$work/lie" && cp -r "$work/n1" "$work/lie" && "$liar" "$work/lie" "$WIT_SIGNING_KEY" forge-loss 8 >/dev/null
if verify "$work/lie" --tolerance 1e-7 >"$work/lie.out" 2>&1; then cat "$work/lie.out"; fail "forged loss within 1e-7"; fi
grep -q "REJECTED: challenges: step 8, field loss: .*exceeds the tolerance" "$work/lie.out" || { cat "$work/lie.out"; fail "tolerance: reason"; }
echo "tolerance, forged loss: $(grep REJECTED "$work/lie.out")"
# Segments of k steps, k a multiple of the checkpoint interval: each starts and ends at one.
verify_c() { "$wit" verify "$1" --key "$work/verifier.pem" --trainer-key "$WIT_SIGNING_KEY.pub" "${@:2}"; }
if verify_c "$work/lie" --segment 6 -c 20 >"$work/lie.out" 2>&1; then cat "$work/lie.out"; fail "forged loss, --segment 6"; fi
grep -q "REJECTED: challenges: step 8, field loss" "$work/lie.out" || { cat "$work/lie.out"; fail "--segment 6: reason"; }
verify_c "$work/n1" --segment 6 -c 20 >"$work/seg.out" 2>&1 || { cat "$work/seg.out"; fail "honest, --segment 6"; }
grep -q "2 of 2 segments (12 steps) replayed bit for bit" "$work/seg.out" || { cat "$work/seg.out"; fail "--segment 6: coverage"; }
rm -f "$work/n1/certificate.json"
echo "segments of 6 steps: honest certified, forged loss: $(grep REJECTED "$work/lie.out")"
# The moments in a checkpoint are where the next segment's replay starts: doubled, with the
# weights and every logged value honest, they are caught where the segment before closes.
rm -rf "$work/lie" && cp -r "$work/n1" "$work/lie" && rm -f "$work/lie/certificate.json"
"$liar" "$work/lie" "$WIT_SIGNING_KEY" scale-moments 6 2 >/dev/null || fail "scale-moments"
if verify "$work/lie" --tolerance 1e-3 >"$work/lie.out" 2>&1; then cat "$work/lie.out"; fail "moments doubled at a checkpoint: consistent within tolerance"; fi
grep -q "REJECTED: challenges: checkpoint after step 6: the replayed AdamW moments are at relative L2 distance 0.5 " "$work/lie.out" ||
  { cat "$work/lie.out"; fail "tolerance, doubled moments: reason"; }
echo "tolerance, moments doubled at a checkpoint: $(grep REJECTED "$work/lie.out")"
# The same under 2 FSDP processes, whose state is gathered from the shards: the lie by the same
# distance, the honest run with none.
fsdp_tolerance() { $mpirun 2 "$wit" verify "$1" --key "$work/verifier.pem" --trainer-key "$WIT_SIGNING_KEY.pub" -c 40 --mode fsdp --tolerance 1e-3; }
fsdp_tolerance "$work/lie" >"$work/lie.out" 2>&1 && { cat "$work/lie.out"; fail "doubled moments, 2 fsdp: consistent within tolerance"; }
grep -q "REJECTED: challenges: checkpoint after step 6: the replayed AdamW moments are at relative L2 distance 0.5 " "$work/lie.out" ||
  { cat "$work/lie.out"; fail "tolerance, doubled moments, 2 fsdp: reason"; }
fsdp_tolerance "$work/n1" >"$work/tol.out" 2>&1
[ $? -eq 4 ] || { cat "$work/tol.out"; fail "honest n1, 2 fsdp, tolerance: expected exit 4"; }
grep -q "checkpointed weights 0, AdamW moments 0$" "$work/tol.out" || { cat "$work/tol.out"; fail "honest n1, 2 fsdp: distances"; }
rm -f "$work/n1/certificate.json"
echo "tolerance under 2 fsdp: doubled moments rejected, the honest run at distance 0"
# A NaN the trainer logged or committed is no agreement: a distance that is NaN rejects, where
# taking the larger of two distances would have dropped it (v scaled tenfold, one element NaN;
# a probe log-probability NaN).
rm -rf "$work/lie" && cp -r "$work/n1" "$work/lie" && rm -f "$work/lie/certificate.json"
"$liar" "$work/lie" "$WIT_SIGNING_KEY" nan-moments 6 10 >/dev/null || fail "nan-moments"
if verify "$work/lie" --tolerance 1e-3 >"$work/lie.out" 2>&1; then cat "$work/lie.out"; fail "NaN moments: consistent within tolerance"; fi
grep -q "REJECTED: challenges: checkpoint after step 6: the replayed AdamW moments are at relative L2 distance nan " "$work/lie.out" ||
  { cat "$work/lie.out"; fail "tolerance, NaN moments: reason"; }
rm -rf "$work/lie" && cp -r "$work/n1" "$work/lie" && rm -f "$work/lie/certificate.json"
"$liar" "$work/lie" "$WIT_SIGNING_KEY" nan-probe 4 >/dev/null || fail "nan-probe"
if verify "$work/lie" --tolerance 1e-3 >"$work/lie.out" 2>&1; then cat "$work/lie.out"; fail "NaN probe: consistent within tolerance"; fi
grep -q "REJECTED: challenges: fingerprint after step 4, field mean_logprob: distance nan exceeds" "$work/lie.out" ||
  { cat "$work/lie.out"; fail "tolerance, NaN probe: reason"; }
echo "tolerance, NaN in moments and in a probe: $(grep REJECTED "$work/lie.out")"

# Bad input: a precise error, a non-zero exit, never a certificate.
rm -rf "$work/bad" && cp -r "$work/n1" "$work/bad" && rm -f "$work/bad/certificate.json" "$work/bad/checkpoints/step_00000006.ckpt"
verify "$work/bad" >"$work/bad.out" 2>&1 && fail "a run with a missing checkpoint was certified"
grep -q "step_00000006.ckpt (after step 6) is missing" "$work/bad.out" || { cat "$work/bad.out"; fail "missing checkpoint: message"; }
[ -f "$work/bad/certificate.json" ] && fail "missing checkpoint: a certificate was written"
# A published model that is no file (here endless zeros) is refused by its size, never read.
rm -rf "$work/bad" && cp -r "$work/n1" "$work/bad" && rm -f "$work/bad/certificate.json" "$work/bad/model.safetensors"
ln -s /dev/zero "$work/bad/model.safetensors"
timeout 300 "$wit" verify "$work/bad" --key "$work/verifier.pem" -c 1 >"$work/bad.out" 2>&1 && fail "a model linked to /dev/zero was certified"
grep -q "REJECTED: model: .*model.safetensors is not the export of the checkpoint after step 12" "$work/bad.out" ||
  { cat "$work/bad.out"; fail "model linked to /dev/zero: message"; }
cp "$work/n1/witness.h5" "$work/bad/witness.h5"
"$wit" verify "$work/n1" --key "$work/verifier.pem" -c 1 >/dev/null 2>&1 || fail "certify n1 again"
out=$(timeout 60 "$wit" verify --check-certificate "$work/n1/certificate.json" --verifier-key "$work/verifier.pem.pub" "$work/bad" 2>&1) &&
  fail "a certificate checked against a model linked to /dev/zero"
grep -q "model.safetensors is not a regular file" <<<"$out" || fail "certificate against /dev/zero: $out"
rm -f "$work/n1/certificate.json"
echo "a published model linked to /dev/zero: rejected by its size, and no certificate checks against it"
# A closing checkpoint damaged in a leaf the structure stage did not sample (one leaf sampled,
# with seed 1 another), in tolerance mode on 2 processes: rank 0
# alone reads it, and every rank gets the verdict instead of waiting for the others.
rm -rf "$work/bad" && cp -r "$work/n1" "$work/bad" && rm -f "$work/bad/certificate.json"
printf '\xff' | dd of="$work/bad/checkpoints/step_00000006.ckpt" bs=1 seek=164 conv=notrunc status=none
timeout 300 $mpirun 2 "$wit" verify "$work/bad" --key "$work/verifier.pem" -c 40 --tolerance 1e-3 \
  --checkpoint-leaves 1 --seed 1 >"$work/bad.out" 2>&1
rc=$?
[ $rc -eq 124 ] && { cat "$work/bad.out"; fail "a damaged closing checkpoint hung a 2-process verifier"; }
grep -q "REJECTED: challenges: .*step_00000006.ckpt: checkpoint contents do not match" "$work/bad.out" ||
  { cat "$work/bad.out"; fail "damaged closing checkpoint, 2 processes: message (exit $rc)"; }
echo "a damaged closing checkpoint under 2 processes: $(grep -o 'REJECTED: challenges: .*' "$work/bad.out" | cut -c1-60)…"
rm -rf "$work/bad" && cp -r "$work/n1" "$work/bad" && head -c 1000 "$work/n1/witness.h5" >"$work/bad/witness.h5"
verify "$work/bad" >"$work/bad.out" 2>&1 && fail "an unreadable log was certified"
grep -q "wit: error: .*witness.h5" "$work/bad.out" || { cat "$work/bad.out"; fail "unreadable log: message"; }
# /meta holds nothing a verdict rests on that the genesis does not commit: editing the committed
# config (a key this build does not know) breaks the genesis, and an attribute schema 2 does not
# define is refused, not ignored.
rm -rf "$work/bad" && cp -r "$work/n1" "$work/bad" && rm -f "$work/bad/certificate.json"
/usr/bin/python3 - "$work/bad/witness.h5" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r+") as f:
    y = f["meta"].attrs["committed_yaml"].decode()
    y = y.replace("model:\n", "model:\n  attention: flash\n", 1)
    f["meta"].attrs["committed_yaml"] = np.bytes_(y.encode())  # fixed-length, as wit writes
PY
verify "$work/bad" >"$work/bad.out" 2>&1 && fail "an edited committed config was certified"
grep -q "meta, field genesis: does not match" "$work/bad.out" || { cat "$work/bad.out"; fail "edited committed config: message"; }
[ -f "$work/bad/certificate.json" ] && fail "edited committed config: a certificate was written"
rm -rf "$work/bad" && cp -r "$work/n1" "$work/bad" && rm -f "$work/bad/certificate.json"
/usr/bin/python3 - "$work/bad/witness.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    f["meta"].attrs["total_steps"] = 6
PY
verify "$work/bad" >"$work/bad.out" 2>&1 && fail "a log with an unknown attribute was certified"
grep -q "meta, field attribute total_steps: is not part of the witness log's schema 2" "$work/bad.out" || { cat "$work/bad.out"; fail "unknown attribute: message"; }
verify "$work/n1" --segment 4 >"$work/bad.out" 2>&1 && fail "a segment that does not end at a checkpoint"
grep -q "segment 4: segments must end at checkpoints, so K must be a multiple of train.checkpoint_every = 3" "$work/bad.out" || { cat "$work/bad.out"; fail "segment: message"; }
verify "$work/n1" --seed -5 >"$work/bad.out" 2>&1 && fail "a negative seed was accepted"
grep -q "seed -5: the seed must be a non-negative integer" "$work/bad.out" || { cat "$work/bad.out"; fail "negative seed: message"; }
$mpirun 3 "$wit" verify "$work/n1" --key "$work/verifier.pem" >"$work/bad.out" 2>&1 && fail "3 processes for 4 micro-batches"
grep -q "world size 3\|3 process" "$work/bad.out" || { cat "$work/bad.out"; fail "world size: message"; }
"$wit" verify "$work/n1" --key "$work/verifier.pem" -c 0 >"$work/bad.out" 2>&1 && fail "zero challenges accepted"
grep -q "at least 1" "$work/bad.out" || { cat "$work/bad.out"; fail "zero challenges: message"; }
echo "bad input: missing checkpoint, unreadable log, edited committed config, unknown attribute, a segment that does not end at checkpoints, a negative seed, a world size that does not divide M, no challenges: refused"
echo "verify: honest runs certified, every lie rejected"
