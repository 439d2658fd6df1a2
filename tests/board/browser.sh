#!/usr/bin/env bash
# The board's pages in a real browser: headless Chromium loads a track's page and an entry's
# page of a board holding an honest (certified, ranked) and a forged (struck) tiny run; the
# rendered DOM must hold the ranking, the guarantee, the loss curve's SVG and the strike's step
# and field; no page scrolls sideways at 390 px or 1280 px. Screenshots of both pages, at both
# widths, are kept as test artefacts in ARTIFACT_DIR.
# Skipped (exit 77) where Chromium is not installed (launch/install-deps installs it).
# Usage: browser.sh WIT_BINARY DISHONEST_BINARY SOURCE_DIR ARTIFACT_DIR
set -uo pipefail
wit=$1 liar=$2 src=$3 artifacts=$4
fail() { echo "FAIL: $*"; exit 1; }
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "SKIP: no chromium (launch/install-deps installs it)"; exit 77; }
work=$(mktemp -d /tmp/wit-board-browser-XXXXXX)
pid=""
trap 'kill $pid 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$artifacts"
"$wit" prepare --out "$work/kjv" >/dev/null || fail prepare
"$wit" keygen --out "$work/board.pem" >/dev/null
export WIT_SIGNING_KEY="$work/trainer.pem"
"$wit" keygen --out "$WIT_SIGNING_KEY" >/dev/null
for p in lab-a lab-b; do "$wit" board participant $p --db "$work/board.sqlite" | tail -1 >"$work/$p.token"; done
small=(--set data.dir="$work/kjv" --set model.n_layer=1 --set model.n_head=2 --set model.n_embd=32
       --set train.threads=1 --set train.checkpoint_every=2 --set train.eval_every=2
       --set witness.fingerprint_every=2 --set train.steps=12)
"$wit" train "$src/configs/tiny.yaml" "${small[@]}" --out "$work/a" -q >/dev/null || fail "train a"
"$wit" train "$src/configs/tiny.yaml" "${small[@]}" --set train.seed=5 --out "$work/b" -q >/dev/null || fail "train b"
"$liar" "$work/b" "$WIT_SIGNING_KEY" inflate-eval >/dev/null || fail "the dishonest trainer"
"$wit" board serve --tracks "$src/configs/board/tracks.yaml" --db "$work/board.sqlite" --files "$work/files" \
  --key "$work/board.pem" --listen 127.0.0.1:0 --datasets "$work/kjv" --contribution 0 >"$work/board.out" 2>&1 &
pid=$!
url=""
for _ in $(seq 200); do
  url=$(sed -n 's|.* on \(http://[0-9.:]*/\).*|\1|p' "$work/board.out")
  [ -n "$url" ] && break
  sleep 0.05
done
[ -n "$url" ] || { cat "$work/board.out"; fail "the board did not start"; }
"$wit" board submit "$work/a" --server "$url" --token "$(cat "$work/lab-a.token")" --track kjv-tiny --name "honest run" >"$work/sa" 2>&1 || { cat "$work/sa"; fail "submit a"; }
"$wit" board submit "$work/b" --server "$url" --token "$(cat "$work/lab-b.token")" --track kjv-tiny --name "inflated" >"$work/sb" 2>&1 || { cat "$work/sb"; fail "submit b"; }
A=$(sed -n 's/.* as entry \([0-9a-f]*\) .*/\1/p' "$work/sa") B=$(sed -n 's/.* as entry \([0-9a-f]*\) .*/\1/p' "$work/sb")
for e in $A $B; do
  for _ in $(seq 300); do
    now=$("$wit" board show $e --server "$url")
    grep -q ": verifying$" <<<"${now%%$'\n'*}" || break
    sleep 0.2
  done
done
chrome() { timeout 120 "$browser" --headless --no-sandbox --disable-gpu --user-data-dir="$work/profile" "$@" 2>"$work/chrome.err"; }
chrome --dump-dom "${url}tracks/kjv-tiny" >"$work/track.html" || { cat "$work/chrome.err"; fail "chromium on the track page"; }
chrome --dump-dom "${url}entries/$A" >"$work/entry.html" || fail "chromium on the entry page"
chrome --dump-dom "${url}entries/$B" >"$work/struck.html" || fail "chromium on the struck entry's page"
/usr/bin/python3 - "$work" "$A" "$B" <<'PY' || fail "the rendered pages"
import sys
from html.parser import HTMLParser
work, A, B = sys.argv[1:4]
class Rows(HTMLParser):
    """Table rows of class `entry` or `check` as lists of cell texts, and the SVG elements."""
    def __init__(self):
        super().__init__()
        self.rows, self.row, self.cell, self.svg = [], None, None, []
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and a.get("class") in ("entry", "check", "report"):
            self.row = {"class": a["class"], "id": a.get("data-entry"), "cells": []}
        elif tag == "td" and self.row is not None:
            self.cell = ""
        elif tag in ("svg", "polyline", "circle"):
            self.svg.append((tag, a))
    def handle_endtag(self, tag):
        if tag == "td" and self.row is not None and self.cell is not None:
            self.row["cells"].append(self.cell.strip())
            self.cell = None
        elif tag == "tr" and self.row is not None:
            self.rows.append(self.row)
            self.row = None
    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data
def parse(name):
    p = Rows()
    p.feed(open(f"{work}/{name}").read())
    return p
track = parse("track.html")
entries = [r for r in track.rows if r["class"] == "entry"]
assert [r["id"] for r in entries] == [A, B], entries
assert entries[0]["cells"][0] == "1" and entries[0]["cells"][1] == "honest run", entries[0]
assert entries[0]["cells"][-1] == "certified", entries[0]
# The challenges are drawn at random: when they happen to cover every segment ("6 of 6"), the
# guarantee is that every step was replayed; otherwise it is the bound on the fraction f.
replayed, segments = entries[0]["cells"][7].split(" of ")
if replayed == segments:
    assert entries[0]["cells"][6] == "every step replayed", entries[0]
else:
    assert "rejected with 99 %" in entries[0]["cells"][6], entries[0]
assert entries[1]["cells"][0] == "" and entries[1]["cells"][-1].startswith("struck: "), entries[1]
assert "eval after step 12, field value" in entries[1]["cells"][-1], entries[1]
entry = parse("entry.html")
assert any(t == "polyline" and len(a.get("points", "").split()) == 12 for t, a in entry.svg), entry.svg
assert sum(1 for t, a in entry.svg if t == "circle") == 6, entry.svg  # val loss every 2 steps
checks = [r for r in entry.rows if r["class"] == "check"]
assert checks and all(r["cells"][1] == "passed" for r in checks), checks
html = open(f"{work}/entry.html").read()
assert "certificate.json" in html, "no certificate link"
# Checkpoints are logged once durable, so how many signatures a run holds depends on timing.
import re
assert re.search(r"signatures   (\d+) of \1 valid, covering 12 steps", html), "no witness summary as wit inspect prints it"
struck = parse("struck.html")
assert any(r["cells"][1] == "failed" for r in struck.rows if r["class"] == "check"), struck.rows
print(f"rendered: {len(entries)} entries ranked and struck, {len(checks)} checks, a loss curve of 12 steps")
PY
# A phone's width (390 px) and a laptop's (1280 px): no page scrolls sideways (wide tables
# scroll inside themselves, long hex wraps, the chart scales).
for w in 390 1280; do
  /usr/bin/python3 "$src/tests/board/page_width.py" "$browser" "$work/profile-$w" "$url" $w / /tracks/kjv-tiny \
    "/entries/$A" "/entries/$B" >"$work/width-$w" 2>&1 || { cat "$work/width-$w"; fail "a page is wider than $w px"; }
  grep -c "scroll width" "$work/width-$w" | grep -q 4 || { cat "$work/width-$w"; fail "not every page measured at $w px"; }
done
echo "widths: $(tr '\n' ';' <"$work/width-390")"
chrome --screenshot="$artifacts/board-track.png" --window-size=1280,800 "${url}tracks/kjv-tiny" || fail "screenshot of the track page"
chrome --screenshot="$artifacts/board-entry.png" --window-size=1280,1600 "${url}entries/$A" || fail "screenshot of the entry page"
chrome --screenshot="$artifacts/board-track-390.png" --window-size=390,844 "${url}tracks/kjv-tiny" || fail "screenshot of the track page at 390 px"
chrome --screenshot="$artifacts/board-entry-390.png" --window-size=390,1600 "${url}entries/$A" || fail "screenshot of the entry page at 390 px"
for png in board-track.png board-entry.png board-track-390.png board-entry-390.png; do
  [ "$(head -c 8 "$artifacts/$png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "$png is not a PNG"
  [ "$(stat -c %s "$artifacts/$png")" -gt 10000 ] || fail "$png is nearly empty"
done
echo "screenshots kept in $artifacts: board-track.png, board-entry.png and both at 390 px"
echo "browser: all passed"
