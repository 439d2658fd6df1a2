#!/usr/bin/env bash
# Rank 0's memory during a checkpoint save: 2 processes (FSDP, the other rank's state streamed
# to rank 0 in 4 MiB pieces) against 1 process, on the state-bound config of dist_scaling.sh.
# Each process initialises the state, resets its peak resident size (/proc/self/clear_refs),
# saves, and reports the peak (VmHWM) reached during the save.
# Usage: benchmarks/fsdp_save_memory.sh [DATA_DIR]   (default data/kjv, prepared if missing;
#        WIT_BUILD_DIR names the build directory, default build)
source "$(dirname "$0")/dist_setup.sh"

file=$(mktemp -u /tmp/wit-save-XXXXXX.ckpt)
one=$($mpirun 1 $bench --mode ddp --data "$data" --save "$file" "${state[@]}")
two=$($mpirun 2 $bench --mode fsdp --data "$data" --save "$file" "${state[@]}")
echo "N=1:      $one"
echo "N=2 FSDP: $two"
python3 - "$one" "$two" <<'PY'
import json, sys
one, two = (json.loads(a) for a in sys.argv[1:])
mib = lambda b: b / 2**20
for name, m in (("N=1", one), ("N=2 FSDP", two)):
    print(f"{name}: rank 0 holds {mib(m['state_bytes_per_rank']):.0f} MiB of state, "
          f"{mib(m['rank0_rss_before_save_bytes']):.0f} MiB resident before the save, peak "
          f"{mib(m['rank0_peak_rss_during_save_bytes']):.0f} MiB during it ({m['save_s']:.1f} s)")
r = two['rank0_peak_rss_during_save_bytes'] / one['rank0_peak_rss_during_save_bytes']
print(f"save: rank 0's peak at N=2 FSDP = {r:.2f}x that of N=1 (target <= 0.6x)")
PY
