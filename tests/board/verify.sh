#!/usr/bin/env bash
# The board verifies its entries: three real tiny runs (two honest, one whose loss at step 23 a
# dishonest trainer forged and re-signed) are submitted; participants' workers (one of them an MPI
# job on two processes) replay others' segments, the board spot-checks them, a worker that lies
# is revoked, a worker that leases a job and vanishes loses it when its lease expires, and the
# board is killed with -9 mid-verification and restarted. In the end the honest entries are
# certified and ranked, with certificates `wit verify --check-certificate` accepts, the forged
# one is struck naming step 23 and the field, and a re-challenge tightens a guarantee. A run
# forged in a middle segment is certified while no middle segment is drawn, struck by
# re-challenges, and its certificate is withdrawn in the board's signed status list.
# Usage: verify.sh WIT_BINARY DISHONEST_BINARY SOURCE_DIR
set -uo pipefail
wit=$1
liar=$2
src=$3
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d /tmp/wit-board-verify-XXXXXX)
pid=""
trap 'kill -9 $pid 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
mpirun="mpirun --oversubscribe --bind-to none -np"
py=/usr/bin/python3

"$wit" prepare --out "$work/kjv" >/dev/null || fail prepare
"$wit" keygen --out "$work/board.pem" >/dev/null
export WIT_SIGNING_KEY="$work/trainer.pem"
"$wit" keygen --out "$WIT_SIGNING_KEY" >/dev/null
for p in alice bob carol mallory; do
  "$wit" board participant $p --db "$work/board.sqlite" | tail -1 >"$work/$p.token"
done
tok() { cat "$work/$1.token"; }
# Twelve segments of two steps each (the board replays the first and the last itself and leaves
# drawn ones to participants); micro-batches divisible by two for the MPI worker.
small=(--set data.dir="$work/kjv" --set model.n_layer=1 --set model.n_head=2 --set model.n_embd=32
       --set train.threads=1 --set train.checkpoint_every=2 --set train.eval_every=0
       --set witness.fingerprint_every=2 --set train.steps=24)
"$wit" train "$src/configs/tiny.yaml" "${small[@]}" --out "$work/a" -q >/dev/null || fail "train a"
"$wit" train "$src/configs/tiny.yaml" "${small[@]}" --set train.seed=2 --out "$work/b" -q >/dev/null || fail "train b"
"$wit" train "$src/configs/tiny.yaml" "${small[@]}" --set train.seed=3 --out "$work/m" -q >/dev/null || fail "train m"
"$liar" "$work/m" "$WIT_SIGNING_KEY" forge-loss 23 >/dev/null || fail "the dishonest trainer"
"$wit" train "$src/configs/tiny.yaml" "${small[@]}" --set train.seed=4 --out "$work/w" -q >/dev/null || fail "train w"
"$liar" "$work/w" "$WIT_SIGNING_KEY" forge-loss 9 >/dev/null || fail "the dishonest trainer (w)"

# Starts the board on a free port with extra options: its pid in $pid, its address in $url.
start_board() {
  "$wit" board serve --tracks "$src/configs/board/tracks.yaml" --db "$work/board.sqlite" \
    --files "$work/files" --key "$work/board.pem" --listen 127.0.0.1:0 --datasets "$work/kjv" \
    --challenges "${challenges:-8}" --contribution 1 --spot-check 1 --lease 4 "$@" >>"$work/board.out" 2>&1 &
  pid=$!
  url=""
  for _ in $(seq 200); do
    url=$(sed -n 's|.* on \(http://[0-9.:]*/\).*|\1|p' "$work/board.out" | tail -1)
    [ -n "$url" ] && kill -0 $pid 2>/dev/null && curl -sf "$url" >/dev/null && break
    url=""
    sleep 0.05
  done
  [ -n "$url" ] || { cat "$work/board.out"; fail "the board did not start"; }
}
# Phase 1: the board's pool leaves open jobs to participants for 10 minutes; it takes its own
# (first and last segments, final checks, and with --spot-check 1 every drawn one once a
# participant reported on it) at once.
start_board --pool-delay 600
entry_of() { sed -n 's/.* as entry \([0-9a-f]*\) .*/\1/p' "$1"; }
# A run holding another run's checkpoint is refused at submission, and nothing is recorded (before
# a is entered: once it is, the copy of its steps is refused first, before any file is read).
cp -r "$work/a" "$work/x"
cp "$work/b/checkpoints/step_00000004.ckpt" "$work/x/checkpoints/step_00000004.ckpt"
"$wit" board submit "$work/x" --server "$url" --token "$(tok alice)" --track kjv-tiny --name spliced \
  >"$work/submit-x" 2>&1 && fail "a run with another run's checkpoint was entered"
grep -q "400 the run's files do not match its log: .*step_00000004.ckpt belongs to another run" "$work/submit-x" ||
  { cat "$work/submit-x"; fail "the spliced checkpoint is not named"; }
# A run that declares a nondeterministic reduction cannot be replayed bit for bit: refused (also
# before a is entered, whose steps it shares).
"$wit" train "$src/configs/tiny.yaml" "${small[@]}" --set dist.reduction=arrival --out "$work/r" -q >/dev/null || fail "train r"
"$wit" board submit "$work/r" --server "$url" --token "$(tok alice)" --track kjv-tiny --name arrival \
  >"$work/submit-r" 2>&1 && fail "a run with dist.reduction = arrival was entered"
grep -q "400 the run cannot be certified: dist.reduction = arrival" "$work/submit-r" ||
  { cat "$work/submit-r"; fail "the nondeterministic run's refusal"; }
for run in a:alice:honest-a b:bob:honest-b m:mallory:forged-m; do
  IFS=: read -r dir who name <<<"$run"
  "$wit" board submit "$work/$dir" --server "$url" --token "$(tok $who)" --track kjv-tiny \
    --name "$name" >"$work/submit-$dir" 2>&1 || { cat "$work/submit-$dir"; fail "submit $dir"; }
  grep -q "(verifying)" "$work/submit-$dir" || { cat "$work/submit-$dir"; fail "$dir: not verifying"; }
done
A=$(entry_of "$work/submit-a") B=$(entry_of "$work/submit-b") M=$(entry_of "$work/submit-m")
# A config.yaml that is not the one the log committed to: refused.
cp -r "$work/a" "$work/y"
sed -i 's/^  seed: .*/  seed: 999/' "$work/y/config.yaml"
"$wit" board submit "$work/y" --server "$url" --token "$(tok alice)" --track kjv-tiny --name edited \
  >"$work/submit-y" 2>&1 && fail "a run with an edited config.yaml was entered"
grep -q "400 config.yaml is not the run's config: its trajectory settings differ" "$work/submit-y" ||
  { cat "$work/submit-y"; fail "the edited config.yaml is not named"; }
[ "$(curl -sf "${url}api/tracks/kjv-tiny" | grep -c '"receipt"')" = 3 ] || fail "a refused run was recorded"
# The entries' files count against no participant's upload quota any more; the refused run's
# edited config.yaml, which no entry uses, still counts against alice's.
$py - "$work/board.sqlite" "$(sha256sum "$work/y/config.yaml" | cut -c1-64)" <<'PY' || fail "upload rows after submission"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
used = {sha for (files,) in db.execute("SELECT files FROM board_entries") for sha in json.loads(files).values()}
held = {sha for (sha,) in db.execute("SELECT sha256 FROM board_uploads WHERE began > '1971'")}
assert used and not used & held, ("entries' files still charged", used & held)
assert sys.argv[2] in held, "the refused run's config.yaml is not charged"
PY
echo "refused at submission, nothing recorded: another run's checkpoint; an edited config.yaml; dist.reduction = arrival"
echo "submitted: honest $A and $B, forged $M; audited at submission"

# Bob's worker, an MPI job on two processes, replays two jobs of other entries; Alice's one.
WIT_BOARD_TOKEN=$(tok bob) $mpirun 2 "$wit" board worker --server "$url" --datasets "$work/kjv" \
  --cache "$work/bob-cache" --name bob-host --jobs 2 --idle-exit 30 >"$work/bob.out" 2>&1 ||
  { cat "$work/bob.out"; fail "bob's worker"; }
[ "$(grep -c "passed (.*reported" "$work/bob.out")" = 2 ] || { cat "$work/bob.out"; fail "bob's worker did not report two passes"; }
grep -q "on 2 process(es)" "$work/bob.out" || fail "bob's worker did not run on 2 processes"
"$wit" board worker --server "$url" --token "$(tok alice)" --datasets "$work/kjv" \
  --cache "$work/alice-cache" --name alice-host --jobs 1 --idle-exit 30 >"$work/alice.out" 2>&1 ||
  { cat "$work/alice.out"; fail "alice's worker"; }
grep -q "reported" "$work/alice.out" || { cat "$work/alice.out"; fail "alice's worker did not report"; }
grep -q "entry $A" "$work/alice.out" && fail "alice's worker replayed her own entry"
echo "workers: bob (mpirun -np 2) replayed 2 segments, alice 1, none of their own"

# Carol's worker leases a job and vanishes (as if killed): it must come back to the queue.
# Mallory's worker lies about a replay of an honest entry: the board's spot check revokes it.
$py - "$url" "$(tok carol)" "$(tok mallory)" "$(tok alice)" >"$work/api.out" <<'PY' || { cat "$work/api.out"; fail "the job API"; }
import json, sys, time, urllib.error, urllib.request
url, carol, mallory, alice = sys.argv[1:5]
def call(path, token=None, body=None, method="POST"):
    headers = {"Authorization": "Bearer " + token} if token else {}
    data = json.dumps(body).encode() if body is not None else b""
    req = urllib.request.Request(url + path.lstrip("/"), data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)
assert call("api/jobs/lease")[0] == 401, "a job without a token"
status, j = call("api/jobs/lease", carol, {"worker": "carol-vanishing"})
assert status == 200 and j["job"], j
job = j["job"]
print("carol", job["id"], job["entry"], job["segment"])
# Another participant cannot report or renew carol's job.
status, e = call(f"api/jobs/{job['id']}/report", alice, {"passed": True, "detail": "x"})
assert status == 409 and "not leased to you" in e["error"], (status, e)
assert call(f"api/jobs/{job['id']}/renew", alice)[0] == 409
# Mallory lies: a failure for a segment of an honest entry.
status, j = call("api/jobs/lease", mallory, {"worker": "mallory-host"})
assert status == 200 and j["job"], j
assert j["job"]["entry"] != job["entry"] or j["job"]["segment"] != job["segment"]
status, r = call(f"api/jobs/{j['job']['id']}/report", mallory,
                 {"passed": False, "detail": "step 3, field loss", "seconds": 1, "worker": "mallory-host"})
assert status == 200, r
print("mallory lied about", j["job"]["entry"], j["job"]["segment"])
for _ in range(600):
    status, e = call("api/me", mallory, method="GET")
    if e["worker_revoked"]:
        break
    time.sleep(0.1)
assert e["worker_revoked"] is True and e["confirmed_replays"] == 0, e
status, e = call("api/jobs/lease", mallory, {"worker": "mallory-host"})
assert status == 403 and "revoked" in e["error"], (status, e)
print("mallory revoked")
PY
carol_job=$(awk '/^carol/ {print $2}' "$work/api.out")
echo "job API: no token 401; another participant's report 409; a lying worker revoked"

# kill -9 of the board mid-verification (jobs queued, carol's still leased); restarted with its
# pool taking every open job at once.
kill -9 $pid
wait $pid 2>/dev/null
start_board --pool-delay 0
# Until the entry is decided and none of its drawn checks waits: a certified entry stays
# certified while re-challenged segments are replayed.
wait_decided() {
  for _ in $(seq 600); do
    s=$("$wit" board show "$1" --server "$url")
    if ! grep -q "being replayed" <<<"$s"; then
      s=${s%%$'\n'*}
      grep -q ": verifying$" <<<"$s" || { echo "$s"; return 0; }
    fi
    sleep 0.2
  done
  "$wit" board show "$1" --server "$url"
  fail "entry $1 is still being verified"
}
for e in $A $B $M; do wait_decided $e >/dev/null; done
"$wit" board show $A --server "$url" >"$work/show-a"
"$wit" board show $M --server "$url" >"$work/show-m"
head -1 "$work/show-a" | grep -q ": certified$" || { cat "$work/show-a"; fail "honest a not certified"; }
grep -q "^  ranked$" "$work/show-a" || { cat "$work/show-a"; fail "honest a not ranked"; }
head -1 "$work/show-m" | grep -q ": struck$" || { cat "$work/show-m"; fail "forged m not struck"; }
grep -q "struck: segment 11 (steps 22 to 23): challenges: step 23, field loss" "$work/show-m" ||
  { cat "$work/show-m"; fail "the strike does not name step 23 and the field"; }
echo "after kill -9 and restart: $(head -1 "$work/show-a"), ranked; $(sed -n 2p "$work/show-m")"

$py - "$url" "$A" "$B" "$M" "$carol_job" "$(tok carol)" <<'PY' || fail "the entries' records"
import json, sys, urllib.error, urllib.request
url, A, B, M, carol_job, carol = sys.argv[1:7]
get = lambda p: json.load(urllib.request.urlopen(url + p))
track = get("api/tracks/kjv-tiny")["entries"]
assert [e["id"] for e in track][2] == M and track[2]["rank"] is None, track
assert sorted(e["id"] for e in track[:2]) == sorted([A, B]) and [e["rank"] for e in track[:2]] == [1, 2], track
assert track[0]["verification"]["val_loss"] <= track[1]["verification"]["val_loss"]
for e in (A, B):
    v = get(f"api/entries/{e}")["verification"]
    assert v["status"] == "certified" and v["ranked"], v
    # Nothing lost or duplicated across the kill: one decided check per challenged segment,
    # at most one report per job.
    assert all(c["status"] == "passed" for c in v["checks"]), v["checks"]
    segs = {d["segment"] for d in v["draws"]}
    assert {c["segment"] for c in v["checks"]} == segs | {-2, -1}, (segs, v["checks"])
    assert v["guarantee"]["challenges"] == 8, v["guarantee"]
reporters = {r["reporter"] for e in (A, B, M) for r in get(f"api/entries/{e}")["verification"]["reports"]}
assert {"board", "bob", "alice", "mallory"} <= reporters, reporters
wrong = [r for e in (A, B, M) for r in get(f"api/entries/{e}")["verification"]["reports"] if r["reporter"] == "mallory"]
assert wrong and all(r["standing"] in ("wrong", "void") for r in wrong), wrong
# Carol's vanished job went back to the queue and was done by someone else: her late report is refused.
req = urllib.request.Request(url + f"api/jobs/{carol_job}/report", method="POST",
                             data=json.dumps({"passed": True, "detail": "late"}).encode(),
                             headers={"Authorization": "Bearer " + carol})
try:
    urllib.request.urlopen(req)
    raise SystemExit("a late report after the lease expired was taken")
except urllib.error.HTTPError as e:
    assert e.code == 409, e.code
page = urllib.request.urlopen(url + f"entries/{A}").read().decode()
assert "<svg" in page and "<polyline" in page and "certificate.json" in page, page[:2000]
assert "struck: segment 11" in urllib.request.urlopen(url + f"entries/{M}").read().decode()
# Bob's and alice's replays gave the state hash after the step the board drew inside each
# segment; the board's own replay reached the same state (bob's on two processes): confirmed.
import time
for _ in range(300):
    mine = [r for e in (A, B, M) for r in get(f"api/entries/{e}")["verification"]["reports"] if r["reporter"] in ("bob", "alice")]
    if len(mine) == 3 and all(r["standing"] == "confirmed" for r in mine):
        break
    time.sleep(0.2)
assert len(mine) == 3 and all(r["standing"] == "confirmed" for r in mine), mine
print("records: ranked in order of val loss, nothing lost or duplicated, the late report refused, "
      "the workers' evidence confirmed by the board's replay")
PY

# The certificates: signed by the board's key, bound to the runs' files.
curl -sf "${url}api/entries/$A/certificate" >"$work/cert-a.json" || fail "no certificate for a"
"$wit" verify --check-certificate "$work/cert-a.json" --verifier-key "$work/board.pem.pub" "$work/a" \
  >"$work/check-a" 2>&1 || { cat "$work/check-a"; fail "the board's certificate of a does not check"; }
"$wit" verify --check-certificate "$work/cert-a.json" --verifier-key "$work/board.pem.pub" "$work/b" \
  >"$work/check-ab" 2>&1 && fail "a's certificate checked against run b"
# It says how the board's dataset names documents (its audit checked every record), as wit
# verify's does: a query proof checked against it hashes documents that way only.
$py -c "import json,sys; d=json.load(open(sys.argv[1]))['dataset']; assert d=={'tokenizer':'byte','tokens_in_no_document':0}, d" \
  "$work/cert-a.json" || fail "a's certificate does not say how its dataset names documents"
curl -s -o /dev/null -w "%{http_code}" "${url}api/entries/$M/certificate" | grep -q 404 || fail "a struck entry has a certificate"
echo "certificate: $(head -1 "$work/check-a")"

# A re-challenge: three more segments of a drawn, replayed, and the certificate re-signed.
[ "$(curl -s -o /dev/null -w "%{http_code}" -X POST -d '{"count": 3}' "${url}api/entries/$A/challenges")" = 401 ] ||
  fail "a re-challenge without a token is not 401"
"$wit" board challenge $A -c 3 --server "$url" >"$work/challenge.out" 2>&1 && fail "a re-challenge without a token"
grep -q "needs a participant's token" "$work/challenge.out" || { cat "$work/challenge.out"; fail "no token hint"; }
"$wit" board challenge $A -c 3 --server "$url" --token "$(tok carol)" >"$work/challenge.out" 2>&1 ||
  { cat "$work/challenge.out"; fail "re-challenge"; }
# While the draws wait, a stays certified and says so.
"$wit" board show $A --server "$url" >"$work/show-a-drawn"
head -1 "$work/show-a-drawn" | grep -q ": certified$" || { cat "$work/show-a-drawn"; fail "a re-challenge unranked a"; }
wait_decided $A >/dev/null
curl -sf "${url}api/entries/$A/certificate" >"$work/cert-a2.json"
$py -c "import json,sys; c=json.load(open(sys.argv[1])); assert c['guarantee']['challenges']==11, c['guarantee']" \
  "$work/cert-a2.json" || fail "the re-challenged certificate"
"$wit" verify --check-certificate "$work/cert-a2.json" --verifier-key "$work/board.pem.pub" "$work/a" >/dev/null ||
  fail "the re-signed certificate does not check"
echo "re-challenge: $(cat "$work/challenge.out"); certificate now states 11 challenges"

# Withdrawal. Offline, a check cannot know of it; the board's signed status list says a's
# certificate stands.
grep -q "withdrawal: not checked: offline" "$work/check-a" || { cat "$work/check-a"; fail "the offline check does not say it cannot know"; }
"$wit" verify --check-certificate "$work/cert-a2.json" --verifier-key "$work/board.pem.pub" --status "$url" \
  >"$work/status-a" 2>&1 || { cat "$work/status-a"; fail "a's certificate with the status list"; }
grep -q "withdrawal: not withdrawn, by the issuer's status list of 20" "$work/status-a" || { cat "$work/status-a"; fail "no status line"; }
# A run forged in a middle segment (its loss at step 9, segment 4), entered while the board
# draws no middle segments: certified on its first, last and final checks. Re-challenges strike
# it, and the certificate fetched before is withdrawn: the status list says so, signed.
kill -TERM $pid
wait $pid
challenges=0 start_board --pool-delay 0
"$wit" board submit "$work/w" --server "$url" --token "$(tok carol)" --track kjv-tiny --name forged-w \
  >"$work/submit-w" 2>&1 || { cat "$work/submit-w"; fail "submit w"; }
W=$(entry_of "$work/submit-w")
wait_decided $W | grep -q ": certified$" || fail "w, checked on its first and last segments only, is not certified"
curl -sf "${url}api/entries/$W/certificate" >"$work/cert-w.json" || fail "no certificate for w"
"$wit" verify --check-certificate "$work/cert-w.json" --verifier-key "$work/board.pem.pub" --status "$url" >/dev/null 2>&1 ||
  fail "w's certificate does not check before its strike"
for _ in $(seq 30); do
  "$wit" board challenge $W -c 5 --server "$url" --token "$(tok alice)" >/dev/null 2>&1 || fail "re-challenge w"
  wait_decided $W | grep -q ": struck$" && break
done
"$wit" board show $W --server "$url" | grep -q "struck: segment 4 (steps 8 to 9): challenges: step 9, field loss" ||
  { "$wit" board show $W --server "$url"; fail "w is not struck at step 9"; }
"$wit" verify --check-certificate "$work/cert-w.json" --verifier-key "$work/board.pem.pub" "$work/w" >"$work/offline-w" 2>&1 ||
  { cat "$work/offline-w"; fail "offline, the withdrawn certificate should still check"; }
"$wit" verify --check-certificate "$work/cert-w.json" --verifier-key "$work/board.pem.pub" --status "$url" \
  >"$work/status-w" 2>&1 && { cat "$work/status-w"; fail "a withdrawn certificate passed with --status"; }
grep -q "^WITHDRAWN certificate .*cert-w.json: struck at 20.*: segment 4 (steps 8 to 9): .*step 9, field loss" "$work/status-w" ||
  { cat "$work/status-w"; fail "the withdrawal is not named"; }
curl -sf "${url}api/certificates/status" >"$work/status.json" || fail "no status list"
"$wit" verify --check-certificate "$work/cert-w.json" --verifier-key "$work/board.pem.pub" --status "$work/status.json" \
  >/dev/null 2>&1 && fail "a withdrawn certificate passed with the status list's file"
sed 's/"struck"/"standing"/' "$work/status.json" >"$work/status-edited.json"
out=$("$wit" verify --check-certificate "$work/cert-w.json" --verifier-key "$work/board.pem.pub" --status "$work/status-edited.json" 2>&1) &&
  fail "an edited status list was taken"
grep -q "signature does not match" <<<"$out" || fail "the edited list is not named: $out"
"$wit" verify --check-certificate "$work/cert-a2.json" --verifier-key "$work/board.pem.pub" --status "$work/status.json" >/dev/null ||
  fail "a's certificate is withdrawn too"
echo "withdrawal: offline the check says it cannot know; $(grep WITHDRAWN "$work/status-w")"
# The OpenAPI document names every route the site serves, and what the live board answers has
# the documented fields.
$py - "$url" "$A" "$src/docs/board-api.yaml" "$src/board/site.h" <<'PY' || fail "docs/board-api.yaml"
import json, re, sys, urllib.request, yaml
url, A, spec_file, site_h = sys.argv[1:5]
spec = yaml.safe_load(open(spec_file))
def deref(node):
    if isinstance(node, dict) and "$ref" in node:
        target = spec
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        return deref(target)
    return node
routes = set()
for line in open(site_h):
    for method, path in re.findall(r"(GET|POST|PUT) (/api/[^\s?]*)", line):
        routes.add((method.lower(), re.sub(r"/NAME", "/{name}", re.sub(r"SHA256", "{sha256}", re.sub(r"/ID", "/{id}", path)))))
documented = {(m, p) for p, ops in spec["paths"].items() for m in ops if m in ("get", "post", "put")}
assert routes <= documented, ("routes the OpenAPI file lacks", routes - documented)
def check(value, schema, where):
    schema = deref(schema)
    if "allOf" in schema:
        for s in schema["allOf"]:
            check(value, s, where)
        return
    if value is None:
        assert schema.get("nullable"), where
        return
    kind = schema.get("type")
    py = {"object": dict, "array": list, "string": str, "boolean": bool, "integer": int, "number": (int, float)}
    if kind:
        assert isinstance(value, py[kind]), (where, kind, value)
    for key in schema.get("required", []):
        assert key in value, (where, "lacks", key)
    for key, sub in schema.get("properties", {}).items():
        if isinstance(value, dict) and key in value:
            check(value[key], sub, where + "." + key)
    if kind == "array":
        for i, item in enumerate(value):
            check(item, schema.get("items", {}), f"{where}[{i}]")
for path, concrete in [("/api/tracks", "/api/tracks"), ("/api/tracks/{id}", "/api/tracks/kjv-tiny"),
                       ("/api/entries/{id}", f"/api/entries/{A}")]:
    body = json.load(urllib.request.urlopen(url + concrete.lstrip("/")))
    check(body, spec["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"], concrete)
print(f"OpenAPI: {len(documented)} operations documented, {len(routes)} routes of the site among them, live answers match")
PY
kill -TERM $pid
wait $pid || fail "exit $? after SIGTERM"
echo "verify: all passed"
