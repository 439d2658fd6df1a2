#!/usr/bin/env bash
# kill -9 in the middle of a run: the witness log stays readable (also while the run is alive,
# by `wit inspect` and by h5py in SWMR mode), verifies up to its last complete record, and
# `wit train --resume` continues the same chain: the final heads equal an uninterrupted run's.
# Usage: crash_resume.sh WIT_BINARY SOURCE_DIR
set -uo pipefail
wit=$1
src=$2
work=$(mktemp -d /tmp/wit-crash-XXXXXX)
trap 'kill -9 $pid 2>/dev/null; rm -rf "$work"' EXIT
pid=0
export WIT_SIGNING_KEY="$work/key.pem"
"$wit" keygen --out "$WIT_SIGNING_KEY" >/dev/null || exit 1
"$wit" prepare --out "$work/data" >/dev/null || exit 1
# About a second a step on one thread: slow enough to be caught mid-run at step 6.
sets=(--set data.dir="$work/data" --set train.steps=12 --set train.checkpoint_every=4
      --set train.eval_every=8 --set witness.fingerprint_every=3 --set train.threads=1)
cfg="$src/configs/tiny.yaml"
fail() { echo "FAIL: $*"; exit 1; }
steps_of() { "$wit" inspect "$1" --json 2>/dev/null | sed -n 's/^  "steps": \([0-9]*\),$/\1/p'; }
heads() { "$wit" inspect "$1" --json | sed -n '/"heads"/,/}/p' | tr -d ' \n'; }

"$wit" train "$cfg" "${sets[@]}" --out "$work/crash" -q >"$work/crash.out" 2>&1 &
pid=$!
for _ in $(seq 600); do
  n=$(steps_of "$work/crash")
  [ -n "$n" ] && [ "$n" -ge 6 ] && break
  kill -0 $pid 2>/dev/null || fail "the run ended before it could be interrupted: $(cat "$work/crash.out")"
  sleep 0.1
done
# Read while it trains: wit inspect and h5py (SWMR).
"$wit" inspect "$work/crash" >"$work/live.txt" || { cat "$work/live.txt"; fail "inspect of a live run"; }
if /usr/bin/python3 -c "import h5py" 2>/dev/null; then
  /usr/bin/python3 - "$work/crash/witness.h5" <<'PY' || fail "h5py cannot read the live log"
import sys, h5py
with h5py.File(sys.argv[1], "r", libver="latest", swmr=True) as f:
    n = f["steps/loss"].shape[0]
    assert n >= 6, n
    print(f"h5py (SWMR) reads {n} steps while the run trains")
PY
fi
kill -9 $pid
wait $pid 2>/dev/null
n=$(steps_of "$work/crash")
echo "killed after $n recorded steps"
[ "$n" -lt 12 ] || fail "the run finished before the kill"

# After the crash: readable, valid through the last complete record, not complete.
"$wit" inspect "$work/crash" >"$work/after.txt" || { cat "$work/after.txt"; fail "log does not verify after kill -9"; }
cat "$work/after.txt"
grep -q "chain        valid" "$work/after.txt" || fail "chain not reported valid"
grep -q "(complete)" "$work/after.txt" && fail "a killed run reported complete"

"$wit" train --resume "$work/crash" -q >/dev/null || fail "resume after kill -9"
"$wit" train "$cfg" "${sets[@]}" --out "$work/straight" -q >/dev/null || fail "uninterrupted run"
"$wit" inspect "$work/crash" >"$work/final.txt" || { cat "$work/final.txt"; fail "resumed log does not verify"; }
cat "$work/final.txt"
grep -q "12 of 12 (complete)" "$work/final.txt" || fail "resumed run not complete"
[ "$(heads "$work/crash")" = "$(heads "$work/straight")" ] || fail "the resumed chain differs from the uninterrupted one"
echo "crash and resume: same chain as an uninterrupted run"

# kill -9 while a checkpoint streams to disk in the background: the partial file never takes the
# checkpoint's name, every checkpoint the log records is whole on disk, and the resume (which
# clears the partial file) gives the uninterrupted run's chain.
"$wit" train "$cfg" "${sets[@]}" --out "$work/mid" -q >"$work/mid.out" 2>&1 &
pid=$!
tmp=
for _ in $(seq 20000); do
  tmp=$(ls "$work/mid/checkpoints" 2>/dev/null | grep '\.ckpt\.tmp\.' | head -1 || true)
  [ -n "$tmp" ] && break
  kill -0 $pid 2>/dev/null || fail "the run ended before a checkpoint write could be interrupted"
  sleep 0.005
done
kill -9 $pid
wait $pid 2>/dev/null
[ -n "$tmp" ] || fail "no checkpoint write was seen in 100 s"
echo "killed while writing ${tmp%%.tmp.*}"
/usr/bin/python3 - "$work/mid" <<'PY' || fail "the log records a checkpoint that is not whole on disk"
import hashlib, os, struct, sys
import h5py
run = sys.argv[1]
with h5py.File(f"{run}/witness.h5", "r", libver="latest", swmr=True) as f:
    rows = list(zip(f["checkpoints/step"][:], f["checkpoints/state_hash"][:]))
for step, state in rows:
    b = open(f"{run}/checkpoints/step_{int(step):08d}.ckpt", "rb").read()
    n = struct.unpack_from("<Q", b, 24)[0]
    leaf = 4096  # the format's leaf size: the largest power of two whose square is <= 24 n, 4 KiB to 1 MiB
    while leaf < 1 << 20 and (2 * leaf) ** 2 <= 24 * n:
        leaf *= 2
    assert b[-8:] == b"WITCKEND" and len(b) == 64 + 12 * n + 32 * (-(-12 * n // leaf)) + 40, step
    assert b[-40:-8] == state.tobytes(), f"step {step}: the file's state hash is not the logged one"
print(f"{len(rows)} logged checkpoints, each whole on disk with the logged state hash")
PY
"$wit" train --resume "$work/mid" -q >/dev/null || fail "resume after a kill mid-checkpoint"
ls "$work/mid/checkpoints" | grep -q '\.tmp\.' && fail "the resume left the partial checkpoint"
[ "$(heads "$work/mid")" = "$(heads "$work/straight")" ] || fail "resumed after a kill mid-checkpoint: the chain differs"
echo "kill -9 during a background checkpoint write: nothing logged is lost, same chain after resume"

# Out of memory in a step (a micro-batch whose activations no host can hold): a clear message
# naming what to lower, a non-zero exit, and a log that stays valid with the steps before it.
"$wit" train "$cfg" "${sets[@]}" --set train.micro_batch_size=400000 --set train.micro_batches=1 \
  --out "$work/oom" -q >"$work/oom.out" 2>&1 && fail "a step that cannot fit in memory ran"
grep -q "out of host memory in step 0 .*lower train.micro_batch_size.*start a new run" "$work/oom.out" ||
  { cat "$work/oom.out"; fail "out of memory: message"; }
"$wit" inspect "$work/oom" >/dev/null || fail "the log of a run that ran out of memory does not verify"
echo "out of memory: clear message, log valid"
