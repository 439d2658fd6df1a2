#!/usr/bin/env bash
# `wit board serve`: on a free loopback port it serves the shipped tracks' pages and API, knows
# a participant added with `wit board participant` by its token, and SIGTERM stops it with
# exit 0; a bad --listen or an unusable address is refused.
# Usage: serve.sh WIT_BINARY SOURCE_DIR
set -uo pipefail
wit=$1
src=$2
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d /tmp/wit-serve-XXXXXX)
trap 'kill $pid 2>/dev/null; rm -rf "$work"' EXIT
token=$("$wit" board participant lab-a --db "$work/board.sqlite" | tail -1)
"$wit" board serve --tracks "$src/configs/board/tracks.yaml" --db "$work/board.sqlite" \
  --listen 127.0.0.1:0 >"$work/out" 2>&1 &
pid=$!
url=""
for _ in $(seq 100); do
  url=$(sed -n 's|.* on \(http://[0-9.:]*/\).*|\1|p' "$work/out")
  [ -n "$url" ] && break
  sleep 0.05
done
[ -n "$url" ] || { cat "$work/out"; fail "the server did not say where it listens"; }
/usr/bin/python3 - "$url" "$token" <<'PY' || fail "the pages or the API"
import json, sys, urllib.error, urllib.request
url, token = sys.argv[1], sys.argv[2]
me = urllib.request.Request(url + "api/me", headers={"Authorization": "Bearer " + token})
assert json.load(urllib.request.urlopen(me))["name"] == "lab-a"
tracks = json.load(urllib.request.urlopen(url + "api/tracks"))["tracks"]
assert [t["id"] for t in tracks] == ["kjv-tiny", "gpt2-124m-kjv"], tracks
page = urllib.request.urlopen(url).read().decode()
assert '<a href="/tracks/gpt2-124m-kjv">' in page
try:
    urllib.request.urlopen(url + "api/tracks/none")
    raise SystemExit("no 404")
except urllib.error.HTTPError as e:
    assert e.code == 404 and json.load(e)["error"] == "no track 'none'"
print("served", url)
PY
kill -TERM $pid
wait $pid || fail "exit $? after SIGTERM"
grep -q "terminated, stopping" "$work/out" || fail "no stopping line"
out=$("$wit" board serve --tracks "$src/configs/board/tracks.yaml" --db "$work/board.sqlite" --listen nowhere 2>&1) && fail "--listen nowhere accepted"
echo "$out" | grep -q "expected HOST:PORT" || fail "bad --listen not explained: $out"
out=$("$wit" board serve --tracks "$src/configs/board/tracks.yaml" --db "$work/board.sqlite" --listen 192.0.2.1:80 2>&1) && fail "a foreign address accepted"
echo "$out" | grep -q "cannot listen on 192.0.2.1:80" || fail "unusable address not named: $out"
echo "serve: all passed"
