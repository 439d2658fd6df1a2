#!/usr/bin/env bash
# Checkpoint I/O against the work done, three measurements (docs/benchmarks.md, "Checkpoint I/O"):
#   verify   bytes `wit verify` reads (rchar: every read(2), page cache or disk) and its time, for
#            the tiny config's 48 steps with 4 and with 16 checkpoints, the same challenges
#            (--segment 12, seeds 1-3, -c 2), sampling leaves (the default) and --whole-checkpoints;
#   stall    the training loop's stall per checkpoint at the 124M shape on the CPU (T=64, b=8),
#            6 steps, a checkpoint every 2: background (the default) against --sync-checkpoints,
#            and the step times beside it (the steps that overlap a background write share the
#            cores with it);
#   sample   `wit sample --checkpoint` against sampling from model.safetensors at 124M: wall time
#            and peak resident memory, median of 3.
# Usage: benchmarks/checkpoint_io.sh [verify|stall|sample ...]   (default: all three; DATA_DIR
#        env: default data/kjv, prepared if missing; WIT_BUILD_DIR: default build)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${WIT_BUILD_DIR:-build}
wit=$(realpath "$build/apps/wit/wit")
data=${DATA_DIR:-data/kjv}
[ -f "$data/manifest.h5" ] || "$wit" prepare --out "$data" >/dev/null
data=$(realpath "$data")
work=$(mktemp -d /tmp/wit-ckio-XXXXXX)
trap 'rm -rf "$work"' EXIT
export WIT_SIGNING_KEY="$work/key.pem"
"$wit" keygen --out "$WIT_SIGNING_KEY" >/dev/null
"$wit" keygen --out "$work/verifier.pem" >/dev/null
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(verify stall sample)

# Runs a command; prints "rchar_bytes wall_s peak_rss_kib availability_MB" of it (the parent's
# own I/O counters gain a waited child's; the last is what `wit verify` says it read of the
# checkpoints to check their availability, or -).
measure() {
  python3 - "$@" <<'PY'
import re, resource, subprocess, sys, time
def rchar():
    for line in open("/proc/self/io"):
        if line.startswith("rchar:"):
            return int(line.split()[1])
before, t = rchar(), time.monotonic()
r = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                   errors="replace")
wall = time.monotonic() - t
if r.returncode != 0:
    sys.exit(f"{' '.join(sys.argv[1:3])}: exit {r.returncode}: {r.stderr.strip()[-400:]}")
m = re.search(r"([0-9.]+) MB of checkpoints read to check their availability", r.stdout)
print(rchar() - before, f"{wall:.3f}", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
      m.group(1) if m else "-")
PY
}

tiny=(--set data.dir="$data" --set train.steps=48 --set train.eval_every=0 --set train.threads=1
      --set witness.fingerprint_every=12)
m124=(--set data.dir="$data" --set data.seq_len=64 --set train.micro_batches=1
      --set train.micro_batch_size=8 --set train.eval_every=0 --set train.eval_batches=1
      --set train.log_every=1 --set witness.fingerprint_every=1000)

for part in "${parts[@]}"; do
  case $part in
  verify)
    echo "== verify: bytes read and time, tiny 48 steps, --segment 12 -c 2, seeds 1-3"
    printf "%-12s %-8s %-6s %12s %12s %8s\n" checkpoints mode seed "read MB" "of which ckpt" "wall s"
    for every in 12 3; do
      run="$work/tiny-$every"
      "$wit" train configs/tiny.yaml "${tiny[@]}" --set train.checkpoint_every=$every --out "$run" -q >/dev/null
      n=$(ls "$run/checkpoints" | wc -l)
      ckpt_mb=$(du -cb "$run"/checkpoints/*.ckpt | tail -1 | awk '{printf "%.1f", $1/1e6}')
      for mode in sampled whole; do
        extra=()
        [ $mode = whole ] && extra=(--whole-checkpoints)
        for seed in 1 2 3; do
          rm -f "$run"/certificate.*
          read -r bytes wall _ avail < <(measure "$wit" verify "$run" --segment 12 -c 2 \
            --seed $seed --key "$work/verifier.pem" "${extra[@]}")
          printf "%-12s %-8s %-6s %12.1f %12s %8.2f\n" "$n ($ckpt_mb MB)" $mode $seed \
            "$(awk "BEGIN { print $bytes / 1e6 }")" "$avail" "$wall"
        done
      done
    done
    ;;
  stall)
    echo "== stall: the loop's stall per checkpoint, 124M shape (T=64, b=8), 2 threads, 6 steps, a checkpoint every 2"
    for mode in sync background; do
      run="$work/m124-$mode"
      extra=()
      [ $mode = sync ] && extra=(--sync-checkpoints)
      "$wit" train configs/gpt2-124m.yaml "${m124[@]}" --set train.steps=6 --set train.threads=2 \
        --set train.checkpoint_every=2 --out "$run" -q "${extra[@]}" >/dev/null
      /usr/bin/python3 - "$run/metrics.jsonl" "$run/witness.h5" $mode <<'PY'
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1])]
stall = [r["checkpoint_s"] for r in rows if "checkpoint_s" in r]
write = [r["checkpoint_write_s"] for r in rows if "checkpoint_write_s" in r]
try:
    import h5py
    with h5py.File(sys.argv[2], "r") as f:
        steps = [float(x) for x in f["steps/step_seconds"][:]]
except Exception:
    steps = []
print(f"{sys.argv[3]:>10}: stall per checkpoint {', '.join(f'{s:.2f}' for s in stall)} s "
      f"(median {statistics.median(stall):.2f}); write {', '.join(f'{w:.2f}' for w in write)} s; "
      f"step seconds {', '.join(f'{s:.2f}' for s in steps)}")
PY
      [ $mode = background ] || cp -r "$run" "$work/m124-keep"
      rm -rf "$run"
    done
    ;;
  sample)
    echo "== sample: 124M, 16 tokens, median of 3 (wall s, peak RSS MiB)"
    run="$work/m124-keep"
    [ -d "$run" ] || "$wit" train configs/gpt2-124m.yaml "${m124[@]}" --set train.steps=1 \
      --set train.threads=2 --out "$run" -q >/dev/null
    step=$(ls "$run/checkpoints" | tail -1 | sed 's/step_0*\([0-9]*\)\.ckpt/\1/')
    for source in model.safetensors checkpoint; do
      extra=()
      [ $source = checkpoint ] && extra=(--checkpoint "$step")
      walls=() rss=()
      for _ in 1 2 3; do
        read -r _ wall peak _ < <(measure "$wit" sample "$run" -n 16 --tokenizer byte "${extra[@]}")
        walls+=("$wall") rss+=("$peak")
      done
      python3 - "$source" "${walls[@]}" "${rss[@]}" <<'PY'
import statistics, sys
w = [float(x) for x in sys.argv[2:5]]
r = [int(x) for x in sys.argv[5:8]]
print(f"{sys.argv[1]:>18}: {statistics.median(w):.2f} s ({', '.join(f'{x:.2f}' for x in w)}), "
      f"peak RSS {max(r) / 1024:.0f} MiB")
PY
    done
    ;;
  *) echo "unknown part $part (verify, stall, sample)" >&2; exit 2 ;;
  esac
done
