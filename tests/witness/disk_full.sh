#!/usr/bin/env bash
# The disk fills up while a run trains: the run stops with a clear error naming what it could not
# write, the witness log stays valid through its last complete record, and once space is freed
# `wit train --resume` completes the run with a log that verifies.
# Needs a small file system of its own (a tmpfs mount, as root); skipped (exit 77) without one.
# Usage: disk_full.sh WIT_BINARY SOURCE_DIR
set -uo pipefail
wit=$1
src=$2
work=$(mktemp -d /tmp/wit-full-XXXXXX)
disk="$work/disk"
mkdir -p "$disk"
pid=0
cleanup() {
  [ "$pid" -ne 0 ] && kill -9 $pid 2>/dev/null
  umount "$disk" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
if ! mount -t tmpfs -o size=32m tmpfs "$disk" 2>/dev/null; then
  echo "SKIP: cannot mount a tmpfs here (needs root)"
  exit 77
fi
fail() { echo "FAIL: $*"; exit 1; }
export WIT_SIGNING_KEY="$work/key.pem"
"$wit" keygen --out "$WIT_SIGNING_KEY" >/dev/null || exit 1
"$wit" prepare --out "$work/data" >/dev/null || exit 1
sets=(--set data.dir="$work/data" --set model.n_layer=2 --set model.n_embd=64 --set model.n_head=2
      --set train.steps=400 --set train.checkpoint_every=50 --set train.eval_every=0
      --set train.log_every=1 --set train.threads=1)
steps_of() { "$wit" inspect "$1" --json 2>/dev/null | sed -n 's/^  "steps": \([0-9]*\),$/\1/p'; }

"$wit" train "$src/configs/tiny.yaml" "${sets[@]}" --out "$disk/run" >"$work/out" 2>&1 &
pid=$!
for _ in $(seq 300); do
  n=$(steps_of "$disk/run")
  [ -n "$n" ] && [ "$n" -ge 60 ] && break
  kill -0 $pid 2>/dev/null || fail "the run ended early: $(tail -3 "$work/out")"
  sleep 0.05
done
# Fill what is left of the disk.
dd if=/dev/zero of="$disk/filler" bs=64k >/dev/null 2>&1
wait $pid
rc=$?
pid=0
tail -2 "$work/out"
[ $rc -ne 0 ] || fail "the run finished on a full disk"
grep -Eq "is full|No space left on device" "$work/out" || fail "the error does not say the disk is full"
"$wit" inspect "$disk/run" >"$work/after.txt" || { cat "$work/after.txt"; fail "log invalid after the disk filled"; }
grep "steps  \|chain " "$work/after.txt"
rm -f "$disk/filler"
"$wit" train --resume "$disk/run" -q >/dev/null || fail "resume after freeing space"
"$wit" inspect "$disk/run" >"$work/final.txt" || { cat "$work/final.txt"; fail "log invalid after resume"; }
grep -q "400 of 400 (complete)" "$work/final.txt" || { cat "$work/final.txt"; fail "not complete"; }
echo "disk full: clear error, valid log, resumed to completion"
