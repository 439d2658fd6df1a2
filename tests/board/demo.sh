#!/usr/bin/env bash
# launch/board-demo with the built binaries (no install, no build): the honest run is certified
# and ranked with its guarantee, the dishonest one struck with its failing step and field.
# Usage: demo.sh WIT_BINARY DISHONEST_BINARY SOURCE_DIR
set -uo pipefail
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d /tmp/wit-board-demo-XXXXXX)
trap 'rm -rf "$work"' EXIT
WIT_BINARY=$1 WIT_DISHONEST=$2 WIT_DEMO_DIR="$work/demo" WIT_DEMO_DATA="$work/kjv" WIT_DEMO_PORT=0 \
  "$3/launch/board-demo" --no-build --exit >"$work/out" 2>&1 || { cat "$work/out"; fail "board-demo"; }
grep -q "(honest tiny) on kjv-tiny by honest-lab: certified$" "$work/out" || { cat "$work/out"; fail "the honest run is not certified"; }
grep -q "^  ranked$" "$work/out" || { cat "$work/out"; fail "the honest run is not ranked"; }
grep -q "guarantee: the first and the last segment were replayed by the board, and 3 segment(s) drawn" "$work/out" ||
  { cat "$work/out"; fail "no guarantee"; }
grep -q "(too good to be true) on kjv-tiny by shady-lab: struck$" "$work/out" || { cat "$work/out"; fail "the dishonest run is not struck"; }
grep -q "struck: .*eval after step 30, field value: recomputed .*, the log says" "$work/out" ||
  { cat "$work/out"; fail "the strike does not name the step and field"; }
grep -q "the track's ranking:  http://127.0.0.1:[0-9]*/tracks/kjv-tiny" "$work/out" || fail "no URL"
grep "struck:" "$work/out"
echo "demo: passed"
