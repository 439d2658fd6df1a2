#!/usr/bin/env bash
# `wit board serve`: on a free loopback port it serves the shipped tracks' pages and API, knows
# a participant added with `wit board participant` by its token, takes a 64 MiB upload that was
# stopped after its first piece and resumed, enters a real run (and refuses one for another
# track's dataset, another participant's run, copies and extras), survives kill -9 mid-upload with its state, and SIGTERM stops it with exit
# 0; a bad --listen or an unusable address is refused.
# Usage: serve.sh WIT_BINARY SOURCE_DIR
set -uo pipefail
wit=$1
src=$2
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d /tmp/wit-serve-XXXXXX)
trap 'kill $pid 2>/dev/null; rm -rf "$work"' EXIT
token=$("$wit" board participant lab-a --db "$work/board.sqlite" | tail -1)
token_b=$("$wit" board participant lab-b --db "$work/board.sqlite" | tail -1)
"$wit" prepare --out "$work/kjv" >/dev/null || fail prepare
"$wit" keygen --out "$work/board-key.pem" >/dev/null
out=$("$wit" board serve --tracks "$src/configs/board/tracks.yaml" --db "$work/board.sqlite" \
  --files "$work/files" --key "$work/none.pem" --listen 127.0.0.1:0 2>&1) && fail "served without a key"
grep -q "wit keygen --out" <<<"$out" || fail "a missing key is not explained: $out"
# Starts the board on a free port: its pid in $pid, its address in $url.
start_server() {
  "$wit" board serve --tracks "$src/configs/board/tracks.yaml" --db "$work/board.sqlite" \
    --files "$work/files" --key "$work/board-key.pem" --listen 127.0.0.1:0 --datasets "$work/kjv" \
    >"$work/out" 2>&1 &
  pid=$!
  url=""
  for _ in $(seq 100); do
    url=$(sed -n 's|.* on \(http://[0-9.:]*/\).*|\1|p' "$work/out")
    [ -n "$url" ] && break
    sleep 0.05
  done
  [ -n "$url" ] || { cat "$work/out"; fail "the server did not say where it listens"; }
}
start_server
/usr/bin/python3 - "$url" "$token" <<'PY' || fail "the pages or the API"
import json, sys, urllib.error, urllib.request
url, token = sys.argv[1], sys.argv[2]
me = urllib.request.Request(url + "api/me", headers={"Authorization": "Bearer " + token})
assert json.load(urllib.request.urlopen(me))["name"] == "lab-a"
tracks = json.load(urllib.request.urlopen(url + "api/tracks"))["tracks"]
assert [t["id"] for t in tracks] == ["kjv-tiny", "gpt2-124m-kjv", "gpt2-350m-kjv", "gpt2-774m-kjv", "gpt2-1558m-kjv"], tracks
page = urllib.request.urlopen(url).read().decode()
assert '<a href="/tracks/gpt2-124m-kjv">' in page
try:
    urllib.request.urlopen(url + "api/tracks/none")
    raise SystemExit("no 404")
except urllib.error.HTTPError as e:
    assert e.code == 404 and json.load(e)["error"] == "no track 'none'"
print("served", url)
PY
# An upload stopped after its first piece resumes where the board says it is.
head -c $((64 << 20)) /dev/urandom >"$work/big.bin"
sha=$(sha256sum "$work/big.bin" | cut -c1-64)
"$wit" board upload "$work/big.bin" --server "$url" --token "$token" >"$work/up1" 2>&1 &
up=$!
for _ in $(seq 200); do grep -q "MB (" "$work/up1" && break; sleep 0.02; done
kill -9 $up 2>/dev/null
wait $up 2>/dev/null
WIT_BOARD_TOKEN=$token "$wit" board upload "$work/big.bin" --server "$url" >"$work/up2" 2>&1 ||
  { cat "$work/up1" "$work/up2"; fail "the second upload"; }
grep -q "uploaded, sha256 $sha" "$work/up2" || { cat "$work/up2"; fail "not uploaded"; }
if grep -q "MB (100%)" "$work/up1"; then
  echo "upload: the first attempt finished before it was stopped"
else
  grep -q "resuming at byte" "$work/up2" || { cat "$work/up2"; fail "the upload did not resume"; }
  echo "upload: stopped after $(grep -c "MB (" "$work/up1") piece(s), $(grep "resuming" "$work/up2")"
fi
cmp -s "$work/big.bin" "$work/files/blobs/${sha:0:2}/${sha:2}" || fail "the stored file differs"
[ -z "$(ls "$work/files/partial")" ] || fail "partial files left behind"
out=$("$wit" board upload "$work/big.bin" --server "$url" --token "wit_$(printf '0%.0s' $(seq 64))" 2>&1) &&
  fail "an unknown token uploaded"
grep -q "401" <<<"$out" || fail "no 401 for an unknown token: $out"

# A finished tiny run, within kjv-tiny's rules, submitted: uploaded, checked, recorded with its
# signed head and a receipt the client verifies; one over the budget is refused with the reason.
export WIT_SIGNING_KEY="$work/trainer.pem"
"$wit" keygen --out "$WIT_SIGNING_KEY" >/dev/null
small=(--set data.dir="$work/kjv" --set model.n_layer=1 --set model.n_head=2 --set model.n_embd=32
       --set train.threads=1 --set train.checkpoint_every=1 --set train.eval_every=0
       --set witness.fingerprint_every=1 --set train.steps=2)
"$wit" train "$src/configs/tiny.yaml" "${small[@]}" --out "$work/run" -q >/dev/null || fail "train"
"$wit" board submit "$work/run" --server "$url" --token "$token" --track kjv-tiny --name "first try" \
  >"$work/submit" 2>&1 || { cat "$work/submit"; fail "submit"; }
grep -q "as entry [0-9a-f]* (verifying): signed head [0-9a-f]*, 2 steps" "$work/submit" ||
  { cat "$work/submit"; fail "no entry line"; }
grep -q "receipt signed by the board's key $(sed -n 's/.*receipts signed by key //p' "$work/out")" "$work/submit" ||
  fail "the receipt is not the serving board's"
/usr/bin/python3 - "$url" <<'PY' || fail "the entry is not on the track"
import json, sys, urllib.request
url = sys.argv[1]
track = json.load(urllib.request.urlopen(url + "api/tracks/kjv-tiny"))
assert [e["name"] for e in track["entries"]] == ["first try"], track["entries"]
entry = json.load(urllib.request.urlopen(url + "api/entries/" + track["entries"][0]["id"]))
assert entry["participant"] == "lab-a" and entry["steps"] == 2
assert "first try" in urllib.request.urlopen(url + "tracks/kjv-tiny").read().decode()
PY
out=$("$wit" board submit "$work/run" --server "$url" --token "$token" --track gpt2-124m-kjv --name x 2>&1) &&
  fail "a run on another dataset was entered"
grep -q "may not enter gpt2-124m-kjv: trained on dataset .*; nothing was uploaded" <<<"$out" || fail "no refusal: $out"
echo "submit: entry recorded with its signed head and a verified receipt; a run for another dataset refused before any upload"

# A run enters once: the same run again, under another name, is refused; so is the same
# computation signed by another key and entered by another participant (what a copy re-keyed
# without training looks like to the board: every step's fields the same, every hash not).
out=$("$wit" board submit "$work/run" --server "$url" --token "$token" --track kjv-tiny --name again 2>&1) &&
  fail "the same run was entered twice"
grep -q "400 steps 0 to 1 of this run are entry [0-9a-f]*'s (entered by lab-a at " <<<"$out" || fail "no refusal of the duplicate: $out"
"$wit" keygen --out "$work/thief.pem" >/dev/null
# Theft: lab-b downloads lab-a's published run and enters it as is: its log is signed by a key
# lab-b cannot register (it does not hold the private key), so the board refuses it first.
out=$(WIT_SIGNING_KEY="$work/thief.pem" "$wit" board submit "$work/run" --server "$url" --token "$token_b" \
  --track kjv-tiny --name stolen 2>&1) && fail "another participant's run was entered as is"
grep -q "is signed by trainer key [0-9a-f]*, which participant lab-b has not registered on this board .*nothing was uploaded" <<<"$out" ||
  fail "no refusal of the stolen run: $out"
# The board refuses it too, asked directly with the run's published files.
/usr/bin/python3 - "$url" "$token_b" <<'PY' || fail "the board took a stolen run"
import json, sys, urllib.error, urllib.request
url, token = sys.argv[1], sys.argv[2]
first = [e for e in json.load(urllib.request.urlopen(url + "api/tracks/kjv-tiny"))["entries"] if e["name"] == "first try"][0]
req = urllib.request.Request(url + "api/entries", method="POST", headers={"Authorization": "Bearer " + token},
                             data=json.dumps({"track": "kjv-tiny", "name": "stolen", "files": first["receipt"]["files"]}).encode())
try:
    urllib.request.urlopen(req)
    raise SystemExit("entered")
except urllib.error.HTTPError as e:
    error = json.load(e)["error"]
    assert e.code == 400 and "which participant lab-b has not registered" in error, (e.code, error)
PY
out=$("$wit" board submit "$work/run" --server "$url" --token "$token_b" --track kjv-tiny --name stolen \
  --key "$work/thief.pem" 2>&1) && fail "a run was entered with a key that did not sign it"
grep -q "is trainer key [0-9a-f]*, but .* is signed by key" <<<"$out" || fail "a wrong --key is not named: $out"
"$wit" board register-key --key "$work/thief.pem" --server "$url" --token "$token_b" >"$work/register" 2>&1 ||
  { cat "$work/register"; fail "register-key"; }
grep -q "trainer key [0-9a-f]* registered for participant lab-b" "$work/register" || { cat "$work/register"; fail "register-key said"; }
echo "theft: another participant's run refused (its key is not the thief's); $(cat "$work/register")"
WIT_SIGNING_KEY="$work/thief.pem" "$wit" train "$src/configs/tiny.yaml" "${small[@]}" --out "$work/copy" -q >/dev/null ||
  fail "train the copy"
out=$("$wit" board submit "$work/copy" --server "$url" --token "$token_b" --track kjv-tiny --name mine \
  --key "$work/thief.pem" 2>&1) && fail "a re-keyed copy of another participant's run was entered"
grep -q "400 steps 0 to 1 of this run are entry [0-9a-f]*'s (entered by lab-a at " <<<"$out" || fail "no refusal of the copy: $out"
# The same computation with another checkpoint interval: other segments, the same blocks.
WIT_SIGNING_KEY="$work/thief.pem" "$wit" train "$src/configs/tiny.yaml" "${small[@]}" \
  --set train.checkpoint_every=2 --out "$work/copy2" -q >/dev/null || fail "train the copy with checkpoints every 2"
out=$("$wit" board submit "$work/copy2" --server "$url" --token "$token_b" --track kjv-tiny --name mine2 \
  --key "$work/thief.pem" 2>&1) && fail "a copy with another train.checkpoint_every was entered"
grep -q "400 steps 0 to 1 of this run are entry [0-9a-f]*'s (entered by lab-a at " <<<"$out" || fail "no refusal of the copy2: $out"
"$wit" train "$src/configs/tiny.yaml" "${small[@]}" --set train.seed=9 --out "$work/other" -q >/dev/null || fail "train another"
"$wit" board submit "$work/other" --server "$url" --token "$token_b" --track kjv-tiny --name "own seed" \
  >"$work/submit-other" 2>&1 || { cat "$work/submit-other"; fail "a run of its own seed was refused"; }
echo "copies: the same run twice and a copy under another key (at any checkpoint interval) refused; a run of its own seed entered"
/usr/bin/python3 - "$url" "$token" <<'PY' || fail "extras in a submission"
import json, sys, urllib.error, urllib.request
url, token = sys.argv[1], sys.argv[2]
first = [e for e in json.load(urllib.request.urlopen(url + "api/tracks/kjv-tiny"))["entries"]
         if e["name"] == "first try"][0]
files = dict(first["receipt"]["files"])
def refused(body, reason):
    req = urllib.request.Request(url + "api/entries", data=body.encode(), method="POST",
                                 headers={"Authorization": "Bearer " + token})
    try:
        urllib.request.urlopen(req)
    except urllib.error.HTTPError as e:
        got = json.load(e)["error"]
        assert e.code == 400 and reason in got, (e.code, got)
        return
    raise AssertionError("entered: " + body[:200])
extra = dict(files, **{"checkpoints/step_00000099.ckpt": files["checkpoints/step_00000001.ckpt"]})
refused(json.dumps({"track": "kjv-tiny", "name": "extra", "files": extra}),
        "checkpoints/step_00000099.ckpt is not a checkpoint the log commits to")
refused('{"track": "kjv-tiny", "name": "a", "name": "b", "files": %s}' % json.dumps(files),
        "the submission gives the key 'name' twice")
refused('{"track": "kjv-tiny", "name": "a", "files": {"witness.h5": "%s", "witness.h5": "%s"}}'
        % (files["witness.h5"], files["config.yaml"]), "the submission gives the key 'witness.h5' twice")
PY
echo "extras: an uncommitted checkpoint and a key given twice refused"

# kill -9 of the board in the middle of an upload: after a restart the entry and the token are
# still there, the half upload was never visible, and it resumes to the same bytes.
head -c $((48 << 20)) /dev/urandom >"$work/big2.bin"
sha2=$(sha256sum "$work/big2.bin" | cut -c1-64)
"$wit" board upload "$work/big2.bin" --server "$url" --token "$token" >"$work/up3" 2>&1 &
up=$!
for _ in $(seq 200); do grep -q "MB (" "$work/up3" && break; sleep 0.02; done
kill -9 $pid $up 2>/dev/null
wait $pid $up 2>/dev/null
[ -e "$work/files/blobs/${sha2:0:2}/${sha2:2}" ] && ! grep -q "(100%)" "$work/up3" &&
  fail "a half upload is visible after the board was killed"
start_server
/usr/bin/python3 - "$url" "$token" <<'PY' || fail "the state after a kill -9"
import json, sys, urllib.request
url, token = sys.argv[1], sys.argv[2]
me = urllib.request.Request(url + "api/me", headers={"Authorization": "Bearer " + token})
assert json.load(urllib.request.urlopen(me))["name"] == "lab-a"
entries = json.load(urllib.request.urlopen(url + "api/tracks/kjv-tiny"))["entries"]
assert sorted(e["name"] for e in entries) == ["first try", "own seed"], entries
PY
"$wit" board upload "$work/big2.bin" --server "$url" --token "$token" >"$work/up4" 2>&1 ||
  { cat "$work/up4"; fail "the upload after the restart"; }
cmp -s "$work/big2.bin" "$work/files/blobs/${sha2:0:2}/${sha2:2}" || fail "the stored file differs after the restart"
echo "board killed with -9 mid-upload: restarted with its entry and token; upload $(grep -o "resuming at byte [0-9]*" "$work/up4" || echo "started again"), same bytes"

kill -TERM $pid
wait $pid || fail "exit $? after SIGTERM"
grep -q "terminated, stopping" "$work/out" || fail "no stopping line"
out=$("$wit" board serve --tracks "$src/configs/board/tracks.yaml" --db "$work/board.sqlite" --files "$work/files" --key "$work/board-key.pem" --listen nowhere 2>&1) && fail "--listen nowhere accepted"
grep -q "expected HOST:PORT" <<<"$out" || fail "bad --listen not explained: $out"
out=$("$wit" board serve --tracks "$src/configs/board/tracks.yaml" --db "$work/board.sqlite" --files "$work/files" --key "$work/board-key.pem" --listen 192.0.2.1:80 2>&1) && fail "a foreign address accepted"
grep -q "cannot listen on 192.0.2.1:80" <<<"$out" || fail "unusable address not named: $out"
echo "serve: all passed"
