#!/usr/bin/env bash
# The board under load, on loopback, against SQLite and against PostgreSQL: 32 submitters of tiny
# runs (each a participant of its own, each uploading a fresh 1 MiB file and submitting its run
# again and again: entered the first time, audited and refused as a copy after) and 200 page
# reads per second, for 60 s
# (benchmarks/board_load.py). The board verifies what it receives meanwhile (its pool and the
# audits at submission share the machine with the load). Reports submissions audited/s, entries, uploads/s, page
# latency p50/p99, errors and lost entries.
# Usage: benchmarks/board_load.sh [SECONDS] [READS_PER_SECOND] [SUBMITTERS]   (after launch/build)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60} rate=${2:-200} submitters=${3:-32}
wit=$PWD/${WIT_BUILD_DIR:-build}/apps/wit/wit
work=$(mktemp -d /tmp/wit-board-load-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
export WIT_SIGNING_KEY="$work/trainer.pem"
"$wit" keygen --out "$WIT_SIGNING_KEY" >/dev/null
"$wit" keygen --out "$work/board.pem" >/dev/null
"$wit" prepare --out "$work/kjv" >/dev/null
echo "training $submitters tiny runs (2 steps, 2 checkpoints each)"
small=(--set data.dir="$work/kjv" --set model.n_layer=1 --set model.n_head=2 --set model.n_embd=32
       --set train.threads=1 --set train.checkpoint_every=1 --set train.eval_every=0
       --set witness.fingerprint_every=1 --set train.steps=2)
for i in $(seq 0 $((submitters - 1))); do
  "$wit" train configs/tiny.yaml "${small[@]}" --set train.seed=$((i + 1)) --out "$work/runs/$i" -q >/dev/null &
  (( (i + 1) % 2 == 0 )) && wait
done
wait

# One measurement against the database $1 (a path or a postgresql:// URL).
measure() {
  local db=$1 name=$2
  : >"$work/tokens"
  for i in $(seq 0 $((submitters - 1))); do
    "$wit" board participant "load-$i" --db "$db" | tail -1 >>"$work/tokens"
  done
  rm -rf "$work/files"
  : >"$work/board-$name.log"  # there before the board's first line, which is waited for below
  "$wit" board serve --tracks configs/board/tracks.yaml --datasets "$work/kjv" --db "$db" \
    --files "$work/files" --key "$work/board.pem" --listen 127.0.0.1:0 --threads 4 \
    >>"$work/board-$name.log" 2>&1 &
  local pid=$! url=""
  for _ in $(seq 100); do
    url=$(sed -n 's|.* on \(http://[0-9.:]*/\).*|\1|p' "$work/board-$name.log")
    [ -n "$url" ] && break
    sleep 0.1
  done
  [ -n "$url" ] || { cat "$work/board-$name.log"; exit 1; }
  # Each participant registers the trainer key its run is signed with.
  while read -r t; do
    "$wit" board register-key --server "$url" --token "$t" >/dev/null
  done <"$work/tokens"
  echo "$name: $submitters submitters and $rate page reads/s for $seconds s against $url"
  local status=0
  /usr/bin/python3 benchmarks/board_load.py "$url" "$work/tokens" "$work/runs" "$seconds" "$rate" |
    tee "$work/result-$name.json" || status=1
  kill -TERM $pid
  wait $pid || true
  echo "$name: jobs verified by the pool meanwhile: $(grep -c "passed\|FAILED" "$work/board-$name.log")"
  return $status
}
measure "$work/board.sqlite" sqlite
if [ -x tests/board/with_postgres.sh ]; then
  export -f measure
  export wit work seconds rate submitters
  tests/board/with_postgres.sh bash -c 'measure "$WIT_TEST_POSTGRES_URL" postgresql'
fi
