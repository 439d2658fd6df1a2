#!/usr/bin/env bash
# Distributed benchmarks of docs/benchmarks.md, on this machine's two cores, one thread per rank:
#   scaling  tokens/s of 2 processes (DDP) against 1, on a config where compute dominates;
#   memory   peak resident memory per rank of 2 processes (FSDP) against 1, on a config where
#            parameters and AdamW state dominate, with the model state bytes beside it;
#   comm     time inside collectives as a fraction of the step.
# Usage: benchmarks/dist_scaling.sh [DATA_DIR]   (default data/kjv, prepared if missing;
#        WIT_BUILD_DIR names the build directory, default build)
source "$(dirname "$0")/dist_setup.sh"

echo "== scaling (compute-bound config, DDP) =="
# The shared machine's speed drifts between runs (a lone process also gets a faster clock), so
# N=1 and N=2 alternate three times and the median of the three adjacent ratios is reported.
pairs=()
for round in 1 2 3; do
  one=$($mpirun 1 $bench --mode ddp --data "$data" --steps 3 "${compute[@]}")
  two=$($mpirun 2 $bench --mode ddp --data "$data" --steps 3 "${compute[@]}")
  echo "round $round N=1: $one"; echo "round $round N=2: $two"
  pairs+=("$one" "$two")
done
echo "== memory (state-bound config: N=1 vs N=2 FSDP) =="
m1=$($mpirun 1 $bench --mode ddp --data "$data" --steps 2 "${state[@]}")
m2=$($mpirun 2 $bench --mode fsdp --data "$data" --steps 2 "${state[@]}")
echo "N=1:      $m1"; echo "N=2 FSDP: $m2"
python3 - "$m1" "$m2" "${pairs[@]}" <<'PY'
import json, sys
m1, m2, *runs = (json.loads(a) for a in sys.argv[1:])
ratios = sorted((runs[i + 1]['tokens_per_s'] / runs[i]['tokens_per_s'], i) for i in range(0, len(runs), 2))
ratio, i = ratios[len(ratios) // 2]
one, two = runs[i], runs[i + 1]
print(f"\nscaling: N=2 reaches {ratio:.2f}x the tokens/s of N=1, median of "
      f"{', '.join(f'{r:.2f}' for r, _ in ratios)} "
      f"({one['tokens_per_s']:.0f} -> {two['tokens_per_s']:.0f}; target >= 1.8x)")
print(f"communication: {100*two['comm_s']/two['step_s']:.1f}% of the N=2 DDP step, "
      f"{100*m2['comm_s']/m2['step_s']:.1f}% of the N=2 FSDP step")
for name, m in (("N=1", m1), ("N=2 FSDP", m2)):
    print(f"memory {name}: peak RSS {m['peak_rss_bytes_max_rank']/2**20:.0f} MiB per rank, "
          f"model state {m['state_bytes_per_rank']/2**20:.0f} MiB per rank "
          f"({m['params']/1e6:.1f}M parameters)")
print(f"memory: N=2 FSDP peak per rank = {m2['peak_rss_bytes_max_rank']/m1['peak_rss_bytes_max_rank']:.2f}x "
      f"that of N=1 (target <= 0.6x)")
PY
