#!/usr/bin/env bash
# Two board servers behind one PostgreSQL database and one file store (as several `serve`
# instances behind a load balancer): runs submitted to either are verified by both pools, every
# job is leased and reported once, and both serve the same ranking. Run by with_postgres.sh,
# which sets WIT_TEST_POSTGRES_URL.
# Usage: with_postgres.sh two_servers.sh WIT_BINARY SOURCE_DIR
set -uo pipefail
wit=$1 src=$2
fail() { echo "FAIL: $*"; exit 1; }
db=${WIT_TEST_POSTGRES_URL:?run me with tests/board/with_postgres.sh}
work=$(mktemp -d /tmp/wit-board-two-XXXXXX)
pids=()
trap 'kill ${pids[*]} 2>/dev/null; rm -rf "$work"' EXIT
"$wit" prepare --out "$work/kjv" >/dev/null || fail prepare
"$wit" keygen --out "$work/board.pem" >/dev/null
export WIT_SIGNING_KEY="$work/trainer.pem"
"$wit" keygen --out "$WIT_SIGNING_KEY" >/dev/null
for p in lab-a lab-b lab-c lab-d; do "$wit" board participant $p --db "$db" | tail -1 >"$work/$p.token" || fail "participant"; done
small=(--set data.dir="$work/kjv" --set model.n_layer=1 --set model.n_head=2 --set model.n_embd=32
       --set train.threads=1 --set train.checkpoint_every=1 --set train.eval_every=0
       --set witness.fingerprint_every=1 --set train.steps=8)
for i in 1 2 3 4; do
  "$wit" train "$src/configs/tiny.yaml" "${small[@]}" --set train.seed=$i --out "$work/r$i" -q >/dev/null || fail "train r$i"
done
urls=()
for n in 1 2; do
  "$wit" board serve --tracks "$src/configs/board/tracks.yaml" --db "$db" --files "$work/files" \
    --key "$work/board.pem" --listen 127.0.0.1:0 --datasets "$work/kjv" --challenges 3 \
    --contribution 0 >"$work/board$n.out" 2>&1 &
  pids+=($!)
  url=""
  for _ in $(seq 200); do
    url=$(sed -n 's|.* on \(http://[0-9.:]*/\).*|\1|p' "$work/board$n.out")
    [ -n "$url" ] && break
    sleep 0.05
  done
  [ -n "$url" ] || { cat "$work/board$n.out"; fail "board $n did not start"; }
  urls+=("$url")
done
# Runs 1 and 3 through the first server, 2 and 4 through the second, at the same time.
labs=(lab-a lab-b lab-c lab-d)
submits=()
for i in 1 2 3 4; do
  "$wit" board submit "$work/r$i" --server "${urls[$(( (i + 1) % 2 ))]}" --token "$(cat "$work/${labs[$((i - 1))]}.token")" \
    --track kjv-tiny --name "run $i" >"$work/submit$i" 2>&1 &
  submits+=($!)
done
wait "${submits[@]}"
for i in 1 2 3 4; do grep -q "(verifying)" "$work/submit$i" || { cat "$work/submit$i"; fail "submit $i"; }; done
for _ in $(seq 600); do
  n=$(curl -sf "${urls[0]}api/tracks/kjv-tiny" |
      /usr/bin/python3 -c "import json, sys; print(sum(e['status'] == 'certified' for e in json.load(sys.stdin)['entries']))")
  [ "$n" = 4 ] && break
  sleep 0.2
done
[ "$n" = 4 ] || { curl -s "${urls[0]}api/tracks/kjv-tiny" | head -50; fail "not every entry certified ($n)"; }
/usr/bin/python3 - "${urls[0]}" "${urls[1]}" <<'PY' || fail "the two servers' records"
import json, sys, urllib.request
a, b = (json.load(urllib.request.urlopen(u + "api/tracks/kjv-tiny"))["entries"] for u in sys.argv[1:3])
ids = lambda t: [(e["id"], e["rank"]) for e in t]
assert ids(a) == ids(b) and len(a) == 4, (ids(a), ids(b))
pools = set()
for e in a:
    v = json.load(urllib.request.urlopen(sys.argv[1] + "api/entries/" + e["id"]))["verification"]
    decided = [c for c in v["checks"] if c["segment"] != -2]
    # Each check decided by exactly one report (the board's), whichever server's pool made it.
    assert len(v["reports"]) == len(decided), (len(v["reports"]), len(decided))
    pools |= {r["worker"] for r in v["reports"]}
print("two servers: 4 entries certified, one report per check, the same ranking on both; pools:", sorted(pools))
PY
grep -q "board pool 0 (pid [0-9]*): entry" "$work/board1.out" && grep -q "board pool 0 (pid [0-9]*): entry" "$work/board2.out" ||
  echo "note: one server's pool did all the work this time"
echo "two_servers: all passed"
