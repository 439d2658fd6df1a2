#!/usr/bin/env bash
# A new user's first command, timed: for each git revision given, a fresh clone of it runs
# launch/quickstart (install what training needs, build and install wit, prepare the built-in
# corpus, train configs/tiny.yaml) into a prefix of its own, and the time of each phase is read
# from the quickstart's own lines. Revisions run one after the other on this machine, so their
# times compare; the first line of the table is the first revision.
# Packages already installed (apt) and PyPI's wheels in pip's cache are reused, as on a second
# fresh clone; the build, the data and the run are made anew in every clone.
#
# Usage: benchmarks/quickstart_time.sh REV [REV ...]   (e.g. HEAD~3 HEAD)
#   --keep   leave the clones under /tmp/wit-quickstart-time (removed by default)
set -euo pipefail
cd "$(dirname "$0")/.."
keep=0 revs=()
while [ $# -gt 0 ]; do
  case $1 in
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "quickstart_time: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) revs+=("$1"); shift ;;
  esac
done
[ ${#revs[@]} -gt 0 ] || { echo "quickstart_time: give one or more git revisions (see --help)" >&2; exit 2; }
for r in "${revs[@]}"; do
  git rev-parse --verify -q "$r^{commit}" >/dev/null || { echo "quickstart_time: $r is not a revision here" >&2; exit 2; }
done
src=$(pwd)
top=/tmp/wit-quickstart-time
rm -rf "$top" && mkdir -p "$top"
[ $keep = 1 ] || trap 'rm -rf "$top"' EXIT
rows=()
for r in "${revs[@]}"; do
  sha=$(git rev-parse --short "$r")
  dir=$top/$sha
  git clone -q "$src" "$dir" && git -C "$dir" checkout -q "$sha"
  echo "quickstart_time: $r ($sha) in $dir"
  start=$(date +%s.%N)
  # Each line stamped with the seconds since the start; the phase boundaries are the
  # quickstart's own lines.
  set +e
  (cd "$dir" && WIT_PREFIX="$dir/prefix" launch/quickstart 2>&1) | while IFS= read -r line; do
    printf '%8.1f %s\n' "$(echo "$(date +%s.%N) - $start" | bc)" "$line"
  done >"$dir/quickstart.log"
  rc=${PIPESTATUS[0]}
  set -e
  total=$(echo "$(date +%s.%N) - $start" | bc)
  [ "$rc" = 0 ] || { tail -20 "$dir/quickstart.log"; echo "quickstart_time: $r failed" >&2; exit 1; }
  at() { grep -m1 "$1" "$dir/quickstart.log" | awk '{print $1}'; }
  configured=$(at "build: configuring") built=$(at "build: done") prepared=$(at "quickstart: training")
  rows+=("$(printf '%-10s %9.0f %9.0f %9.0f %9.0f %9.0f' "$sha" "$configured" \
    "$(echo "$built - $configured" | bc)" "$(echo "$prepared - $built" | bc)" \
    "$(echo "$total - $prepared" | bc)" "$total")")
done
echo
printf '%-10s %9s %9s %9s %9s %9s\n' revision "install" build prepare "train" total
printf '%s\n' "${rows[@]}"
echo "(seconds; $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'))"
